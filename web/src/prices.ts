// Prices: the current price per GPU model and tier, and the announced
// history of the selected one.
import type { Price, PricePoint } from './api';
import { Chart, chartBox, palette } from './charts';
import { card, type Context, type Section } from './section';
import { cellClasses, ErrorBanner, fmtCredits, fmtTime, h, setText, syncRows, table } from './ui';

const key = (p: { gpu_model: string; tier: string }) => `${p.gpu_model}/${p.tier}`;

export class PricesSection implements Section {
  readonly id = 'prices';
  readonly title = 'Prices';
  readonly root = h('div', { class: 'section', 'data-testid': 'section-prices' });

  private readonly error = new ErrorBanner('prices-error');
  private readonly historyError = new ErrorBanner('price-history-error');
  private readonly rows = table('prices-table', [['GPU model'], ['Tier'], ['Credits per GPU-hour', 'num']]);
  private readonly chartTitle = h('p', { class: 'note', 'data-testid': 'price-history-title' }, 'Select a price to see its history.');
  private readonly chart: Chart<'line', { x: number; y: number }[], number>;
  private readonly box: HTMLDivElement;
  private selected: { gpu_model: string; tier: string } | null = null;
  private ctx: Context | null = null;

  constructor() {
    const { box, canvas } = chartBox('price-chart', 280);
    this.box = box;
    box.dataset.points = '0';
    this.chart = new Chart(canvas, {
      type: 'line',
      data: { datasets: [{ label: 'Credits per GPU-hour', data: [], borderColor: palette.teal, backgroundColor: palette.teal, stepped: 'before', pointRadius: 3, borderWidth: 2 }] },
      options: {
        parsing: false,
        scales: {
          x: { type: 'linear', ticks: { callback: (v) => fmtTime(Number(v)).slice(5, 16), maxTicksLimit: 7, maxRotation: 0 } },
          y: { beginAtZero: true, title: { display: true, text: 'credits / GPU-hour' } },
        },
        plugins: {
          legend: { display: false },
          tooltip: { callbacks: { title: (items) => fmtTime(items[0]?.parsed.x ?? 0), label: (c) => `${(c.parsed.y ?? 0).toFixed(6)} credits / GPU-hour` } },
        },
      },
    });
    this.rows.body.addEventListener('click', (ev) => {
      const row = (ev.target as Element).closest('tr');
      if (!row?.dataset.key) return;
      const [gpu_model = '', tier = ''] = row.dataset.key.split('/');
      this.select({ gpu_model, tier });
    });
    this.root.append(
      this.error.node,
      h(
        'div',
        { class: 'two-col' },
        card('Current prices', h('div', { class: 'table-wrap' }, this.rows.table)),
        card('Price history', this.historyError.node, this.chartTitle, box),
      ),
    );
  }

  private select(p: { gpu_model: string; tier: string }): void {
    this.selected = p;
    for (const row of Array.from(this.rows.body.rows)) row.classList.toggle('selected', row.dataset.key === key(p));
    if (this.ctx) void this.loadHistory(this.ctx);
  }

  async refresh(ctx: Context): Promise<void> {
    this.ctx = ctx;
    let prices: Price[];
    try {
      prices = (await ctx.client.prices()).prices;
      this.error.clear();
    } catch (e) {
      this.error.show('/v1/prices', e);
      return;
    }
    syncRows(
      this.rows.body,
      prices,
      key,
      (p) => [p.gpu_model, p.tier, fmtCredits(p.per_gpu_hour)],
      (row, p) => {
        row.dataset.testid = `price-row-${key(p)}`;
        row.classList.add('clickable');
        row.classList.toggle('selected', this.selected !== null && key(p) === key(this.selected));
        row.cells[2]!.title = p.per_gpu_hour;
        cellClasses(row, [undefined, undefined, 'num']);
      },
    );
    if (prices.length === 0) this.rows.body.replaceChildren(h('tr', {}, h('td', { colspan: 3, class: 'empty' }, 'No prices announced.')));
    if (!this.selected && prices[0]) this.selected = { gpu_model: prices[0].gpu_model, tier: prices[0].tier };
    await this.loadHistory(ctx);
  }

  private async loadHistory(ctx: Context): Promise<void> {
    const sel = this.selected;
    if (!sel) return;
    let points: PricePoint[];
    try {
      points = (await ctx.client.priceHistory(sel.gpu_model, sel.tier)).points;
      this.historyError.clear();
    } catch (e) {
      this.historyError.show(`the price history of ${key(sel)}`, e);
      return;
    }
    if (this.selected !== sel) return;
    const data = points.map((p) => ({ x: p.at, y: Number(p.per_gpu_hour) }));
    // A stepped line needs an end: hold the latest price until the daemon's now.
    const now = ctx.cluster?.now;
    const last = data[data.length - 1];
    if (last && now !== undefined && now > last.x) data.push({ x: now, y: last.y });
    const ds = this.chart.data.datasets[0]!;
    ds.data = data;
    ds.pointRadius = data.map((_, i) => (i < points.length ? 3 : 0)); // no dot on the "until now" end
    const x = this.chart.options.scales!.x!;
    x.min = data[0]?.x;
    x.max = data[data.length - 1]?.x;
    this.chart.update('none');
    this.box.dataset.points = String(points.length);
    setText(this.chartTitle, `${sel.gpu_model} · ${sel.tier}: ${points.length} announced price${points.length === 1 ? '' : 's'}`);
  }
}
