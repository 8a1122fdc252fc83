// Cluster: the headline numbers, allocation over the last refreshes, and the
// switch-tree map coloured by occupancy with fragmentation marked.
import type { Cluster, Domain, Topology } from './api';
import { Chart, chartBox, palette } from './charts';
import { card, type Context, type Section } from './section';
import { ErrorBanner, fmtGpus, fmtInt, fmtPct, fmtTime, fmtClock, h, setText } from './ui';

const HISTORY = 90; // refreshes kept client side (3 min at 2 s)

interface Stat {
  value: HTMLElement;
  sub: HTMLElement;
}

export class ClusterSection implements Section {
  readonly id = 'cluster';
  readonly title = 'Cluster';
  readonly root = h('div', { class: 'section', 'data-testid': 'section-cluster' });

  private readonly statsError = new ErrorBanner('cluster-error');
  private readonly topoError = new ErrorBanner('topology-error');
  private readonly stats = new Map<string, Stat>();
  private readonly map = h('div', { class: 'topo', 'data-testid': 'topology-map' });
  private readonly history: { now: number; alloc: number; frag: number }[] = [];
  private readonly chart: Chart<'line', number[], string>;
  private readonly chartBox: HTMLDivElement;

  constructor() {
    const grid = h('div', { class: 'stats' });
    const stat = (key: string, label: string) => {
      const value = h('div', { class: 'stat-value', 'data-testid': `cluster-${key}` }, '—');
      const sub = h('div', { class: 'stat-sub' });
      grid.append(h('div', { class: key === 'now' ? 'stat wide' : 'stat' }, h('div', { class: 'stat-label' }, label), value, sub));
      this.stats.set(key, { value, sub });
    };
    stat('now', 'Daemon clock');
    stat('gpus', 'GPUs');
    stat('allocation', 'Allocated');
    stat('fragmentation', 'Fragmented');
    stat('pending', 'Pending jobs');
    stat('running', 'Running jobs');
    stat('speed', 'Clock speed');
    stat('cycles', 'Cycles');

    const { box, canvas } = chartBox('cluster-chart', 220);
    this.chartBox = box;
    box.dataset.points = '0';
    this.chart = new Chart(canvas, {
      type: 'line',
      data: {
        labels: [],
        datasets: [
          { label: 'Allocation', data: [], borderColor: palette.blue, backgroundColor: palette.blueFill, fill: true, pointRadius: 0, borderWidth: 2, tension: 0.2 },
          { label: 'Fragmentation', data: [], borderColor: palette.orange, pointRadius: 0, borderWidth: 2, tension: 0.2 },
        ],
      },
      options: {
        interaction: { mode: 'index', intersect: false },
        scales: {
          y: { min: 0, max: 100, ticks: { callback: (v) => `${v}%` } },
          x: { ticks: { maxTicksLimit: 8, maxRotation: 0 } },
        },
        plugins: {
          legend: { position: 'bottom', labels: { boxWidth: 12 } },
          tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${(c.parsed.y ?? 0).toFixed(1)}%` } },
        },
      },
    });

    const legend = h(
      'div',
      { class: 'topo-legend' },
      h('span', {}, 'Occupancy'),
      h('span', { class: 'ramp' }),
      h('span', {}, '0% → 100%'),
      h('span', { class: 'swatch frag-some' }),
      h('span', {}, 'fragmented GPUs'),
      h('span', { class: 'swatch frag-high' }),
      h('span', {}, '≥ 10% fragmented'),
    );

    this.root.append(
      this.statsError.node,
      grid,
      card(`Allocation over the last ${HISTORY} refreshes (daemon clock)`, box),
      card('Cluster map', this.topoError.node, legend, this.map),
    );
  }

  /** Fed by the app on every tick, whichever section is shown. */
  update(c: Cluster | null, err?: unknown): void {
    if (!c) {
      this.statsError.show('/v1/cluster', err);
      return;
    }
    this.statsError.clear();
    const set = (key: string, value: string, sub = '') => {
      const s = this.stats.get(key)!;
      setText(s.value, value);
      setText(s.sub, sub);
    };
    set('now', fmtTime(c.now), 'the daemon’s clock, UTC');
    set('gpus', fmtInt(c.gpus), `in ${fmtInt(c.nodes)} nodes`);
    set('allocation', fmtPct(c.allocation_ratio), `${fmtGpus(c.gpus_allocated)} of ${fmtInt(c.gpus)} GPUs`);
    set('fragmentation', fmtPct(c.fragmentation_ratio), 'free, unusable whole-host');
    set('pending', fmtInt(c.pending_jobs));
    set('running', fmtInt(c.running_jobs));
    set('speed', `${c.speed}×`, 'daemon s per wall s');
    set('cycles', fmtInt(c.cycles), 'scheduling cycles');
        this.root.dataset.now = String(c.now);
    this.stats.get('allocation')!.value.dataset.value = String(c.allocation_ratio);

    this.history.push({ now: c.now, alloc: c.allocation_ratio * 100, frag: c.fragmentation_ratio * 100 });
    if (this.history.length > HISTORY) this.history.shift();
    this.chart.data.labels = this.history.map((p) => fmtClock(p.now));
    this.chart.data.datasets[0]!.data = this.history.map((p) => p.alloc);
    this.chart.data.datasets[1]!.data = this.history.map((p) => p.frag);
    if (this.root.isConnected && !this.root.hidden) this.chart.update('none');
    this.chartBox.dataset.points = String(this.history.length);
  }

  async refresh(ctx: Context): Promise<void> {
    this.chart.update('none'); // catches up on points gathered while hidden
    try {
      this.renderTopology(await ctx.client.topology());
      this.topoError.clear();
    } catch (e) {
      this.topoError.show('/v1/cluster/topology', e);
    }
  }

  private renderTopology(t: Topology): void {
    const byLevel = new Map<string, Domain[]>();
    for (const level of t.levels) byLevel.set(level, []);
    for (const d of t.domains) {
      if (!byLevel.has(d.level)) byLevel.set(d.level, []);
      byLevel.get(d.level)!.push(d);
    }
    const names = new Map(t.domains.map((d) => [d.id, d.name]));
    const rows: HTMLElement[] = [];
    for (const [level, domains] of byLevel) {
      if (domains.length === 0) continue;
      domains.sort((a, b) => (a.parent ?? -1) - (b.parent ?? -1) || a.id - b.id);
      const compact = domains.length > 40;
      const tiles = h('div', { class: compact ? 'topo-tiles compact' : 'topo-tiles' });
      let group: HTMLElement | null = null;
      let groupParent: number | null | undefined;
      for (const d of domains) {
        const tile = this.tile(d, compact, d.parent === null ? '' : names.get(d.parent) ?? '');
        if (compact) {
          if (!group || groupParent !== d.parent) {
            groupParent = d.parent;
            group = h('div', { class: 'topo-group', title: names.get(d.parent ?? -1) ?? '' });
            tiles.append(group);
          }
          group.append(tile);
        } else {
          tiles.append(tile);
        }
      }
      const used = domains.reduce((s, d) => s + d.gpus_allocated, 0);
      const total = domains.reduce((s, d) => s + d.gpus, 0);
      rows.push(
        h(
          'div',
          { class: 'topo-level', 'data-level': level },
          h('div', { class: 'topo-level-name' }, h('strong', {}, level), h('span', {}, `${domains.length} domain${domains.length === 1 ? '' : 's'} · ${total ? fmtPct(used / total) : '—'}`)),
          tiles,
        ),
      );
    }
    if (rows.length === 0) rows.push(h('p', { class: 'empty' }, 'The daemon reported no topology domains.'));
    this.map.replaceChildren(...rows);
  }

  private tile(d: Domain, compact: boolean, parent: string): HTMLElement {
    const occ = d.gpus > 0 ? d.gpus_allocated / d.gpus : 0;
    const frag = d.gpus > 0 ? d.gpus_fragmented / d.gpus : 0;
    const light = 95 - occ * 60; // hsl lightness: pale when idle, deep blue when full
    const cls = ['topo-tile', frag >= 0.1 ? 'frag-high' : d.gpus_fragmented > 0 ? 'frag-some' : ''].join(' ').trim();
    const title =
      `${d.name} (${d.level}${parent ? ` in ${parent}` : ''})\n` +
      `${fmtGpus(d.gpus_allocated)} / ${fmtInt(d.gpus)} GPUs allocated (${fmtPct(occ)})\n` +
      `${fmtGpus(d.gpus_fragmented)} fragmented (${fmtPct(frag)})`;
    const tile = h('div', {
      class: cls,
      title,
      'data-testid': 'topo-tile',
      'data-domain': d.name,
      'data-occupancy': occ.toFixed(3),
      style: `background:hsl(221 75% ${light.toFixed(0)}%);color:${light < 62 ? '#fff' : '#1e293b'}`,
    });
    if (!compact) {
      tile.append(
        h('div', { class: 'tile-name' }, d.name),
        h('div', { class: 'tile-num' }, `${fmtGpus(d.gpus_allocated)}/${fmtInt(d.gpus)}`),
        h('div', { class: 'tile-frag' }, d.gpus_fragmented > 0 ? `${fmtGpus(d.gpus_fragmented)} frag` : ''),
      );
    }
    return tile;
  }
}
