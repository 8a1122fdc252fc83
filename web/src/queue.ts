// Queue: pending and running jobs, why a pending job waits (explain), and a
// submit form.
import { ApiError, type Client, type Explain, type Job, type JobList } from './api';
import { card, type Context, type Section } from './section';
import { cellClasses, ErrorBanner, fmtDuration, fmtGpus, fmtTime, h, setText, syncRows, table } from './ui';

const LIMIT = 200;

function gpusOf(j: Job): string {
  return j.gpu_milli > 0 && j.gpu_milli < 1000 ? fmtGpus(j.gpu_milli / 1000) : fmtGpus(j.gpus);
}

export class QueueSection implements Section {
  readonly id = 'queue';
  readonly title = 'Queue';
  readonly root = h('div', { class: 'section', 'data-testid': 'section-queue' });

  private readonly pendingError = new ErrorBanner('pending-error');
  private readonly runningError = new ErrorBanner('running-error');
  private readonly pending = table('pending-table', [['ID', 'num'], ['Name'], ['Tenant'], ['GPUs', 'num'], ['Submitted'], ['Waiting', 'num']]);
  private readonly running = table('running-table', [['ID', 'num'], ['Name'], ['Tenant'], ['GPUs', 'num'], ['Submitted'], ['Started'], ['Running for', 'num']]);
  private readonly pendingNote = h('p', { class: 'note', 'data-testid': 'pending-note' });
  private readonly runningNote = h('p', { class: 'note', 'data-testid': 'running-note' });
  private readonly explain = new ExplainPanel();
  private readonly submit = new SubmitForm();
  private selected: number | null = null;
  private client: Client | null = null;

  constructor() {
    this.pending.body.addEventListener('click', (ev) => {
      const row = (ev.target as Element).closest('tr');
      if (!row || !row.dataset.key || !this.client) return;
      this.select(Number(row.dataset.key));
    });
    this.root.append(
      h(
        'div',
        { class: 'queue-layout' },
        h(
          'div',
          { class: 'queue-main' },
          card('Pending', this.pendingError.node, this.pendingNote, h('div', { class: 'scroll' }, this.pending.table)),
          card('Running', this.runningError.node, this.runningNote, h('div', { class: 'scroll' }, this.running.table)),
        ),
        h('div', { class: 'queue-side' }, this.submit.root, this.explain.root),
      ),
    );
  }

  private select(id: number): void {
    this.selected = id;
    for (const row of Array.from(this.pending.body.rows)) row.classList.toggle('selected', row.dataset.key === String(id));
    if (this.client) void this.explain.load(this.client, id);
  }

  async refresh(ctx: Context): Promise<void> {
    this.client = ctx.client;
    const now = ctx.cluster?.now ?? Math.floor(Date.now() / 1000);
    await Promise.all([
      this.load(ctx, 'pending', this.pendingError, (list) => {
        syncRows(
          this.pending.body,
          list.jobs,
          (j) => String(j.id),
          (j) => [String(j.id), j.name || '—', j.tenant, gpusOf(j), fmtTime(j.submitted_at), fmtDuration(now - j.submitted_at)],
          (row, j) => {
            row.dataset.testid = `job-row-${j.id}`;
            row.classList.add('clickable');
            row.classList.toggle('selected', j.id === this.selected);
            row.title = 'Show why this job waits';
            cellClasses(row, ['num', undefined, undefined, 'num', undefined, 'num']);
          },
        );
        this.note(this.pendingNote, list, ctx.cluster?.pending_jobs, 'pending', 'Click a job to see why it waits.');
      }),
      this.load(ctx, 'running', this.runningError, (list) => {
        syncRows(
          this.running.body,
          list.jobs,
          (j) => String(j.id),
          (j) => [String(j.id), j.name || '—', j.tenant, gpusOf(j), fmtTime(j.submitted_at), fmtTime(j.started_at), j.started_at ? fmtDuration(now - j.started_at) : '—'],
          (row, j) => {
            row.dataset.testid = `job-row-${j.id}`;
            cellClasses(row, ['num', undefined, undefined, 'num', undefined, undefined, 'num']);
          },
        );
        this.note(this.runningNote, list, ctx.cluster?.running_jobs, 'running', '');
      }),
      this.submit.refresh(ctx.client),
    ]);
  }

  private async load(ctx: Context, state: 'pending' | 'running', banner: ErrorBanner, render: (l: JobList) => void): Promise<void> {
    try {
      render(await ctx.client.jobs(state, LIMIT));
      banner.clear();
    } catch (e) {
      banner.show(`${state} jobs`, e);
    }
  }

  private note(node: HTMLElement, list: JobList, total: number | undefined, what: string, hint: string): void {
    const shown = list.jobs.length;
    let text = shown === 0 ? `No ${what} jobs.` : `${shown} ${what} job${shown === 1 ? '' : 's'}`;
    if (shown > 0 && list.next_page_token) text += ` shown (the first ${LIMIT}${total !== undefined ? ` of ${total}` : ''})`;
    if (shown > 0) text += '. ' + hint;
    setText(node, text.trim());
  }
}

class ExplainPanel {
  readonly root: HTMLElement;
  private readonly body = h('div', { class: 'explain-body' }, h('p', { class: 'empty' }, 'Click a pending job to see why it waits and when it should start.'));
  private readonly error = new ErrorBanner('explain-error');
  private seq = 0;

  constructor() {
    this.root = card('Why is it waiting?', this.error.node, this.body);
    this.root.dataset.testid = 'explain-panel';
  }

  async load(client: Client, id: number): Promise<void> {
    const seq = ++this.seq;
    this.root.dataset.job = String(id);
    this.root.dataset.state = 'loading';
    this.body.replaceChildren(h('p', { class: 'empty' }, `Loading job ${id}…`));
    try {
      const ex = await client.explain(id);
      if (seq !== this.seq) return;
      this.error.clear();
      this.render(ex, client, id);
      this.root.dataset.state = 'loaded';
    } catch (e) {
      if (seq !== this.seq) return;
      this.body.replaceChildren();
      this.error.show(`the explanation of job ${id}`, e);
      this.root.dataset.state = 'error';
    }
  }

  private render(ex: Explain, client: Client, id: number): void {
    const causes = ex.causes ?? [];
    const est = ex.start_estimate;
    const when = (t: number | null | undefined) =>
      t === null || t === undefined ? ['—'] : [fmtTime(t), h('span', { class: 'rel' }, t >= ex.now ? `in ${fmtDuration(t - ex.now)}` : `${fmtDuration(ex.now - t)} ago`)];
    const list =
      causes.length === 0
        ? h('p', { class: 'empty' }, 'No blocking cause reported.')
        : h(
            'ol',
            { class: 'causes', 'data-testid': 'explain-causes' },
            ...causes.map((c) =>
              h(
                'li',
                { 'data-testid': 'explain-cause' },
                h('div', { class: 'cause-head' }, h('span', { class: 'badge' }, c.kind), c.shortfall ? h('span', { class: 'muted' }, (c.shortfall_unit ?? 'gpu') === 'gpu' ? `short ${fmtGpus(c.shortfall)} GPUs` : `short ${c.shortfall} ${c.shortfall_unit}`) : null, h('span', { class: c.resolvable ? 'ok' : 'bad' }, c.resolvable ? 'resolvable' : 'not resolvable')),
                h('div', { class: 'cause-detail' }, c.detail),
              ),
            ),
          );
    const refresh = h('button', { type: 'button', class: 'secondary' }, 'Refresh');
    refresh.addEventListener('click', () => void this.load(client, id));
    this.body.replaceChildren(
      h('div', { class: 'explain-head' }, h('strong', { 'data-testid': 'explain-job' }, `Job ${ex.job_id}`), h('span', { class: 'badge' }, ex.state), refresh),
      h(
        'dl',
        { class: 'estimate' },
        h('dt', {}, 'Start P50'),
        h('dd', { 'data-testid': 'explain-p50' }, ...when(est?.p50)),
        h('dt', {}, 'Start P90'),
        h('dd', { 'data-testid': 'explain-p90' }, ...when(est?.p90)),
        h('dt', {}, 'Samples'),
        h('dd', {}, est ? String(est.samples) : '—'),
      ),
      h('h3', {}, 'Causes, most important first'),
      list,
    );
  }
}

const FIELDS = ['tenant', 'gpus', 'estimated_runtime_s', 'name'] as const;

class SubmitForm {
  readonly root: HTMLElement;
  private readonly form: HTMLFormElement;
  private readonly inputs: Record<(typeof FIELDS)[number], HTMLInputElement>;
  private readonly tenantList = h('datalist', { id: 'tenant-names' });
  private readonly result = h('p', { class: 'submit-result', 'data-testid': 'submit-result', 'aria-live': 'polite' });
  private readonly error = h('p', { class: 'submit-error', 'data-testid': 'submit-error', role: 'alert', hidden: true });
  private readonly mine = table('submitted-table', [['ID', 'num'], ['Name'], ['GPUs', 'num'], ['State']]);
  private readonly submitted: Job[] = [];
  private tenantsLoaded = false;
  private client: Client | null = null;

  constructor() {
    const field = (name: (typeof FIELDS)[number], label: string, attrs: Record<string, string | number | boolean>) => {
      const input = h('input', { name, id: `submit-${name}`, 'data-testid': `submit-${name}`, ...attrs });
      return { input, wrap: h('label', { for: `submit-${name}` }, h('span', {}, label), input) };
    };
    const tenant = field('tenant', 'Tenant', { type: 'text', list: 'tenant-names', required: true, autocomplete: 'off', placeholder: 'tenant name' });
    const gpus = field('gpus', 'GPUs', { type: 'number', min: 1, step: 1, value: 1, required: true });
    const runtime = field('estimated_runtime_s', 'Estimated runtime (s)', { type: 'number', min: 1, step: 1, value: 600, required: true });
    const name = field('name', 'Name (optional)', { type: 'text', maxlength: 128, placeholder: 'e.g. llama-70b-sft' });
    this.inputs = { tenant: tenant.input, gpus: gpus.input, estimated_runtime_s: runtime.input, name: name.input };
    const button = h('button', { type: 'submit', 'data-testid': 'submit-button' }, 'Submit job');
    this.form = h('form', { class: 'submit-form', 'data-testid': 'submit-form' }, tenant.wrap, gpus.wrap, runtime.wrap, name.wrap, this.tenantList, button);
    this.form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.send(button);
    });
    this.root = card('Submit job', this.form, this.result, this.error, h('div', { class: 'mine' }, this.mine.table));
  }

  private async send(button: HTMLButtonElement): Promise<void> {
    if (!this.client) return;
    for (const input of Object.values(this.inputs)) input.removeAttribute('aria-invalid');
    this.error.hidden = true;
    setText(this.result, 'Submitting…');
    button.disabled = true;
    const name = this.inputs.name.value.trim();
    try {
      const job = await this.client.submit({
        tenant: this.inputs.tenant.value.trim(),
        gpus: Number(this.inputs.gpus.value),
        estimated_runtime_s: Number(this.inputs.estimated_runtime_s.value),
        ...(name ? { name } : {}),
      });
      setText(this.result, `Submitted job ${job.id} (${job.state}).`);
      this.result.dataset.jobId = String(job.id);
      this.submitted.unshift(job);
      this.submitted.splice(5);
      this.renderMine();
    } catch (e) {
      setText(this.result, '');
      const field = e instanceof ApiError ? e.field : undefined;
      const input = field ? this.inputs[field as (typeof FIELDS)[number]] : undefined;
      input?.setAttribute('aria-invalid', 'true');
      const code = e instanceof ApiError && e.body ? `${e.body.code}: ${e.body.message}` : e instanceof Error ? e.message : String(e);
      setText(this.error, `Not submitted — ${code}${field ? ` (field “${field}”)` : ''}`);
      this.error.hidden = false;
    } finally {
      button.disabled = false;
    }
  }

  private renderMine(): void {
    this.mine.table.parentElement!.hidden = this.submitted.length === 0;
    syncRows(
      this.mine.body,
      this.submitted,
      (j) => String(j.id),
      (j) => [String(j.id), j.name || '—', gpusOf(j), j.state + (j.reason ? ` (${j.reason})` : '')],
      (row) => cellClasses(row, ['num', undefined, 'num', undefined]),
    );
  }

  /** Loads tenant names for the form once, and follows this page's submissions. */
  async refresh(client: Client): Promise<void> {
    this.client = client;
    const work: Promise<unknown>[] = [];
    if (!this.tenantsLoaded) {
      work.push(
        client.tenants().then(
          (t) => {
            this.tenantsLoaded = true;
            this.tenantList.replaceChildren(...t.tenants.map((x) => h('option', { value: x.name })));
            if (!this.inputs.tenant.value && t.tenants.length === 1) this.inputs.tenant.value = t.tenants[0]!.name;
          },
          () => undefined, // the field still takes a typed name; the Tenants tab shows the failure
        ),
      );
    }
    this.submitted.forEach((j, i) => {
      if (['succeeded', 'cancelled', 'failed'].includes(j.state)) return;
      work.push(
        client.job(j.id).then(
          (fresh) => (this.submitted[i] = fresh),
          () => undefined,
        ),
      );
    });
    await Promise.all(work);
    this.renderMine();
  }
}
