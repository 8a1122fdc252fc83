// Reports: the simulation reports under /reports/. The files need the token
// too, so they are fetched with it and shown through a blob URL in a
// sandboxed iframe (scripts run, but in an opaque origin that cannot read
// the dashboard's token).
import type { Report } from './api';
import { card, type Context, type Section } from './section';
import { ErrorBanner, h, setText } from './ui';

export class ReportsSection implements Section {
  readonly id = 'reports';
  readonly title = 'Reports';
  readonly root = h('div', { class: 'section', 'data-testid': 'section-reports' });

  private readonly error = new ErrorBanner('reports-error');
  private readonly viewError = new ErrorBanner('report-view-error');
  private readonly list = h('ul', { class: 'report-list', 'data-testid': 'report-list' });
  private readonly frame = h('iframe', { class: 'report-frame', 'data-testid': 'report-frame', sandbox: 'allow-scripts', title: 'report' });
  private readonly viewTitle = h('p', { class: 'note', 'data-testid': 'report-title' }, 'Choose a report.');
  private readonly download = h('a', { class: 'button secondary', hidden: true }, 'Download');
  private objectUrl: string | null = null;
  private selected: string | null = null;
  private seq = 0;
  private ctx: Context | null = null;

  constructor() {
    this.frame.hidden = true;
    this.list.addEventListener('click', (ev) => {
      const item = (ev.target as Element).closest('li');
      if (!item?.dataset.url || !this.ctx) return;
      void this.open(this.ctx, item.dataset.name ?? '', item.dataset.url);
    });
    this.root.append(
      this.error.node,
      h(
        'div',
        { class: 'reports-layout' },
        card('Reports', this.list),
        card('Report', this.viewError.node, h('div', { class: 'report-head' }, this.viewTitle, this.download), this.frame),
      ),
    );
  }

  async refresh(ctx: Context): Promise<void> {
    this.ctx = ctx;
    let reports: Report[];
    try {
      reports = (await ctx.client.reports()).reports;
      this.error.clear();
    } catch (e) {
      this.error.show('/v1/reports', e);
      return;
    }
    const sig = JSON.stringify(reports);
    if (this.list.dataset.sig === sig) return;
    this.list.dataset.sig = sig;
    this.list.replaceChildren(
      ...(reports.length === 0
        ? [h('li', { class: 'empty' }, 'No reports in the daemon’s reports folder.')]
        : reports.map((r) =>
            h(
              'li',
              { 'data-testid': `report-${r.name}`, 'data-name': r.name, 'data-url': r.url, class: r.name === this.selected ? 'selected' : undefined },
              h('strong', {}, r.name),
              h('span', { class: 'muted' }, r.url),
            ),
          )),
    );
  }

  private async open(ctx: Context, name: string, url: string): Promise<void> {
    const seq = ++this.seq;
    this.selected = name;
    for (const li of Array.from(this.list.children) as HTMLElement[]) li.classList.toggle('selected', li.dataset.name === name);
    setText(this.viewTitle, `Loading ${name}…`);
    this.frame.dataset.state = 'loading';
    try {
      const res = await ctx.client.fetchRaw(url);
      const type = res.headers.get('Content-Type') || 'text/html';
      const blob = new Blob([await res.arrayBuffer()], { type });
      if (seq !== this.seq) return;
      if (this.objectUrl) URL.revokeObjectURL(this.objectUrl);
      this.objectUrl = URL.createObjectURL(blob);
      this.frame.src = this.objectUrl;
      this.frame.hidden = false;
      this.frame.dataset.state = 'loaded';
      this.frame.dataset.report = name;
      this.download.setAttribute('href', this.objectUrl);
      this.download.setAttribute('download', url.split('/').pop() || `${name}.html`);
      this.download.hidden = false;
      setText(this.viewTitle, `${name} — ${url}`);
      this.viewError.clear();
    } catch (e) {
      if (seq !== this.seq) return;
      this.frame.dataset.state = 'error';
      setText(this.viewTitle, name);
      this.viewError.show(`the report ${name}`, e);
    }
  }
}
