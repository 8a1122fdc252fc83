// Small DOM and formatting helpers shared by the sections.

type Attrs = Record<string, string | number | boolean | undefined>;
type Child = Node | string | number | null | undefined | false;

/** Creates an element: h('td', {class: 'num'}, '12'). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

/** Sets text only when it changed, so refreshes do not disturb selection or hover. */
export function setText(node: Element, text: string): void {
  if (node.textContent !== text) node.textContent = text;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** Daemon seconds as "2026-12-01 14:00:05 UTC" (the daemon's clock, not the browser's). */
export function fmtTime(s: number | null | undefined): string {
  if (s === null || s === undefined) return '—';
  const d = new Date(s * 1000);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`;
}

/** Short clock for chart axes: "14:00:05". */
export function fmtClock(s: number): string {
  const d = new Date(s * 1000);
  return `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

export function fmtDuration(s: number): string {
  const sign = s < 0 ? '−' : '';
  let t = Math.abs(Math.round(s));
  const d = Math.floor(t / 86400);
  t -= d * 86400;
  const hh = Math.floor(t / 3600);
  t -= hh * 3600;
  const mm = Math.floor(t / 60);
  const ss = t - mm * 60;
  if (d > 0) return `${sign}${d}d ${hh}h`;
  if (hh > 0) return `${sign}${hh}h ${mm}m`;
  if (mm > 0) return `${sign}${mm}m ${ss}s`;
  return `${sign}${ss}s`;
}

/** A ratio 0..1 as "78.8%". */
export function fmtPct(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

export function fmtInt(n: number): string {
  return n.toLocaleString('en-US');
}

/** GPU counts may be fractional (shared GPUs, gpus_allocated 800.5). */
export function fmtGpus(n: number): string {
  return Number.isInteger(n) ? fmtInt(n) : n.toLocaleString('en-US', { maximumFractionDigits: 3 });
}

/**
 * A credit amount ("1234.567890", six places, never a float) rounded half
 * away from zero to cents with thousands separators, in exact integer maths.
 */
export function fmtCredits(amount: string | null): string {
  if (amount === null) return '—';
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(amount.trim());
  if (!m) return amount;
  const neg = m[1] === '-';
  const frac = (m[3] ?? '').padEnd(6, '0').slice(0, 6);
  const micro = BigInt(m[2] ?? '0') * 1000000n + BigInt(frac);
  let cents = micro / 10000n;
  if (micro % 10000n >= 5000n) cents += 1n;
  const whole = (cents / 100n).toLocaleString('en-US');
  const c = String(cents % 100n).padStart(2, '0');
  return `${neg && cents !== 0n ? '−' : ''}${whole}.${c}`;
}

/** A per-section error line; hidden while the last refresh worked. */
export class ErrorBanner {
  readonly node: HTMLDivElement;
  constructor(testid: string) {
    this.node = h('div', { class: 'error-banner', role: 'alert', 'data-testid': testid, hidden: true });
  }
  show(what: string, err: unknown): void {
    const msg = err instanceof Error ? err.message : String(err);
    setText(this.node, `Could not load ${what}: ${msg} — retrying every 2 s.`);
    this.node.hidden = false;
  }
  clear(): void {
    this.node.hidden = true;
  }
}

/**
 * Keeps a tbody in step with a list, reusing rows by key so a 2 s refresh
 * changes only the cells whose text changed (no flicker, clicks stay put).
 */
export function syncRows<T>(
  tbody: HTMLTableSectionElement,
  items: T[],
  key: (item: T) => string,
  cells: (item: T) => string[],
  decorate?: (row: HTMLTableRowElement, item: T) => void,
): void {
  const existing = new Map<string, HTMLTableRowElement>();
  for (const row of Array.from(tbody.rows)) existing.set(row.dataset.key ?? '', row);
  let prev: HTMLTableRowElement | null = null;
  for (const item of items) {
    const k = key(item);
    let row = existing.get(k);
    existing.delete(k);
    const texts = cells(item);
    if (!row) {
      row = document.createElement('tr');
      row.dataset.key = k;
    }
    while (row.cells.length < texts.length) row.insertCell();
    texts.forEach((t, i) => setText(row!.cells[i]!, t));
    decorate?.(row, item);
    const want: Element | null = prev ? prev.nextElementSibling : tbody.firstElementChild;
    if (want !== row) tbody.insertBefore(row, want);
    prev = row;
  }
  for (const row of existing.values()) row.remove();
}

/** A table with a header row; columns listed as [label, className]. */
export function table(testid: string, columns: [string, string?][]): { table: HTMLTableElement; body: HTMLTableSectionElement } {
  const body = h('tbody');
  const t = h(
    'table',
    { class: 'data', 'data-testid': testid },
    h('thead', {}, h('tr', {}, ...columns.map(([label, cls]) => h('th', { class: cls }, label)))),
    body,
  );
  return { table: t, body };
}

/** Applies one class per cell index (numeric columns right-aligned). */
export function cellClasses(row: HTMLTableRowElement, classes: (string | undefined)[]): void {
  classes.forEach((c, i) => {
    const cell = row.cells[i];
    if (cell && c && !cell.classList.contains(c)) cell.classList.add(c);
  });
}
