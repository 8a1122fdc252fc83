// Tenants: guaranteed floors against what each tenant uses and borrows.
import type { Tenant } from './api';
import { Chart, chartBox, palette } from './charts';
import { card, type Context, type Section } from './section';
import { cellClasses, ErrorBanner, fmtCredits, fmtGpus, fmtInt, h, syncRows, table } from './ui';

export class TenantsSection implements Section {
  readonly id = 'tenants';
  readonly title = 'Tenants';
  readonly root = h('div', { class: 'section', 'data-testid': 'section-tenants' });

  private readonly error = new ErrorBanner('tenants-error');
  private readonly rows = table('tenants-table', [
    ['Name'], ['Tier'], ['Floor', 'num'], ['In use', 'num'], ['Borrowed', 'num'], ['Lent', 'num'],
    ['Pending', 'num'], ['Running', 'num'], ['Balance (credits)', 'num'],
  ]);
  private readonly chart: Chart<'bar', number[], string>;
  private readonly box: HTMLDivElement;

  constructor() {
    const { box, canvas } = chartBox('tenants-chart', 280);
    this.box = box;
    this.chart = new Chart(canvas, {
      type: 'bar',
      data: {
        labels: [],
        datasets: [
          { label: 'Floor (guaranteed)', data: [], backgroundColor: palette.slate },
          { label: 'In use', data: [], backgroundColor: palette.blue },
          { label: 'Borrowed (above floor)', data: [], backgroundColor: palette.orange },
        ],
      },
      options: {
        interaction: { mode: 'index', intersect: false },
        scales: { y: { beginAtZero: true, title: { display: true, text: 'GPUs' } }, x: { ticks: { autoSkip: false, maxRotation: 45 } } },
        plugins: { legend: { position: 'bottom', labels: { boxWidth: 12 } } },
      },
    });
    this.root.append(
      this.error.node,
      card('Floor, use and borrowing per tenant', box),
      card('Tenants', h('div', { class: 'table-wrap' }, this.rows.table)),
    );
  }

  async refresh(ctx: Context): Promise<void> {
    let tenants: Tenant[];
    try {
      tenants = (await ctx.client.tenants()).tenants;
      this.error.clear();
    } catch (e) {
      this.error.show('/v1/tenants', e);
      return;
    }
    syncRows(
      this.rows.body,
      tenants,
      (t) => t.name,
      (t) => [
        t.name, t.tier, fmtGpus(t.floor_gpus), fmtGpus(t.in_use_gpus), fmtGpus(t.borrowed_gpus), fmtGpus(t.lent_gpus),
        fmtInt(t.pending_jobs), fmtInt(t.running_jobs), fmtCredits(t.balance),
      ],
      (row, t) => {
        row.dataset.testid = `tenant-row-${t.name}`;
        row.cells[8]!.title = t.balance ?? 'no ledger account';
        cellClasses(row, [undefined, undefined, 'num', 'num', 'num', 'num', 'num', 'num', 'num']);
        row.cells[8]!.classList.toggle('negative', (t.balance ?? '').trim().startsWith('-'));
      },
    );
    if (tenants.length === 0) this.rows.body.replaceChildren(h('tr', {}, h('td', { colspan: 9, class: 'empty' }, 'No tenants visible to this token.')));
    this.chart.data.labels = tenants.map((t) => t.name);
    this.chart.data.datasets[0]!.data = tenants.map((t) => t.floor_gpus);
    this.chart.data.datasets[1]!.data = tenants.map((t) => t.in_use_gpus);
    this.chart.data.datasets[2]!.data = tenants.map((t) => t.borrowed_gpus);
    this.chart.update('none');
    this.box.dataset.points = String(tenants.length);
  }
}
