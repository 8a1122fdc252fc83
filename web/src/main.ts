// The app shell: header, tabs, the token gate and the 2 s refresh loop
// (paused while the browser tab is hidden).
import './style.css';
import { Client, type Cluster, type UnauthorizedError } from './api';
import { forgetToken, storeToken, storedToken, takeTokenFromUrl, tokenForm } from './auth';
import { ClusterSection } from './cluster';
import { PricesSection } from './prices';
import { QueueSection } from './queue';
import { ReportsSection } from './reports';
import type { Context, Section } from './section';
import { TenantsSection } from './tenants';
import { h, setText } from './ui';

const REFRESH_MS = 2000;
const TAB_KEY = 'tidal.tab';

const cluster = new ClusterSection();
const sections: Section[] = [cluster, new QueueSection(), new TenantsSection(), new PricesSection(), new ReportsSection()];

const status = h('span', { class: 'status', 'data-testid': 'status' }, 'connecting');
const who = h('span', { class: 'who', 'data-testid': 'whoami' });
const signOut = h('button', { type: 'button', class: 'link', 'data-testid': 'forget-token' }, 'Forget token');
const tabs = h('nav', { class: 'tabs', role: 'tablist' });
const main = h('main', { class: 'content' });
const gate = h('div', { class: 'gate' });

let active: Section = sections.find((s) => s.id === sessionStorage.getItem(TAB_KEY)) ?? cluster;
let client: Client | null = null;
let lastCluster: Cluster | null = null;
let generation = 0; // bumped on (re)connect so answers for an old token are dropped
let loop = 0; // bumped by every tick: only the newest tick schedules the next
let timer: number | undefined;

for (const s of sections) {
  const tab = h('button', { type: 'button', role: 'tab', 'data-testid': `tab-${s.id}`, 'data-section': s.id }, s.title);
  tab.addEventListener('click', () => {
    show(s);
    if (client) void s.refresh(context(client));
  });
  tabs.append(tab);
  main.append(s.root);
}

document.body.append(
  h(
    'header',
    { class: 'topbar' },
    h('div', { class: 'brand' }, h('span', { class: 'logo', 'aria-hidden': 'true' }, '≋'), h('span', { class: 'name' }, 'tidal'), h('span', { class: 'tagline' }, 'GPU cluster scheduler')),
    tabs,
    h('div', { class: 'right' }, status, who, signOut),
  ),
  gate,
  main,
);

function show(s: Section): void {
  active = s;
  sessionStorage.setItem(TAB_KEY, s.id);
  for (const sec of sections) sec.root.hidden = sec !== s;
  for (const tab of Array.from(tabs.children) as HTMLElement[]) tab.setAttribute('aria-selected', String(tab.dataset.section === s.id));
}

function context(c: Client): Context {
  return { client: c, cluster: lastCluster };
}

function setStatus(kind: 'live' | 'error' | 'paused' | 'signed-out', text: string): void {
  status.className = `status ${kind}`;
  status.dataset.state = kind;
  setText(status, text);
}

async function tick(): Promise<void> {
  window.clearTimeout(timer);
  const me = ++loop;
  const gen = generation;
  const current = () => me === loop && gen === generation;
  if (!client) return;
  if (document.hidden) {
    setStatus('paused', 'paused (tab hidden)');
    return; // visibilitychange restarts the loop
  }
  const c = client;
  try {
    const fresh = await c.cluster();
    if (!current()) return;
    lastCluster = fresh;
    cluster.update(fresh);
    setStatus('live', `live · ${new Date().toLocaleTimeString('en-GB')}`);
  } catch (e) {
    if (!current()) return;
    cluster.update(null, e);
    setStatus('error', 'daemon error');
  }
  if (!current()) return;
  await active.refresh(context(c));
  if (!current()) return;
  timer = window.setTimeout(() => void tick(), REFRESH_MS);
}

function unauthorized(err: UnauthorizedError): void {
  if (!client) return;
  disconnect(`The daemon refused the token (HTTP 401${err.body ? ` ${err.body.code}: ${err.body.message}` : ''}). Paste a valid token.`);
}

function disconnect(message: string): void {
  generation++;
  loop++;
  window.clearTimeout(timer);
  client = null;
  forgetToken();
  setStatus('signed-out', 'not connected');
  setText(who, '');
  signOut.hidden = true;
  main.hidden = true;
  tabs.hidden = true;
  gate.replaceChildren(tokenForm(message, connect));
  gate.hidden = false;
}

function connect(token: string): void {
  storeToken(token);
  const gen = ++generation;
  client = new Client(token, unauthorized);
  gate.hidden = true;
  gate.replaceChildren();
  main.hidden = false;
  tabs.hidden = false;
  signOut.hidden = false;
  setStatus('live', 'connecting');
  show(active);
  client.whoami().then(
    (w) => gen === generation && setText(who, `${w.name || w.id} · ${w.role}${w.tenant ? ` · ${w.tenant}` : ''}`),
    () => undefined, // 401 reopens the token form; anything else only leaves the name blank
  );
  void tick();
}

signOut.addEventListener('click', () => disconnect(''));
document.addEventListener('visibilitychange', () => {
  if (!document.hidden && client) void tick();
});
window.addEventListener('hashchange', () => {
  const t = takeTokenFromUrl();
  if (t) connect(t);
});

const initial = takeTokenFromUrl() ?? storedToken();
if (initial) connect(initial);
else disconnect('');
