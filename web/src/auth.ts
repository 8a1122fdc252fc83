// The bearer token: taken from the URL fragment the daemon prints
// (http://host:port/#token=tidal_...), kept in sessionStorage for this tab
// only, and removed from the visible URL so it is not shared or bookmarked.
import { h } from './ui';

const KEY = 'tidal.token';

/** Moves a #token=... from the URL into sessionStorage; returns it or null. */
export function takeTokenFromUrl(): string | null {
  const hash = location.hash.replace(/^#/, '');
  if (!hash) return null;
  // split by hand: URLSearchParams would turn a '+' in a token into a space
  const parts = hash.split('&');
  const at = parts.findIndex((p) => p.startsWith('token='));
  if (at < 0) return null;
  let token = parts[at]!.slice('token='.length);
  try {
    token = decodeURIComponent(token);
  } catch {
    // not percent-encoded: take it as it is
  }
  parts.splice(at, 1);
  const rest = parts.join('&');
  history.replaceState(history.state, '', `${location.pathname}${location.search}${rest ? `#${rest}` : ''}`);
  const t = token.trim();
  if (!t) return null;
  sessionStorage.setItem(KEY, t);
  return t;
}

export function storedToken(): string | null {
  return sessionStorage.getItem(KEY);
}

export function storeToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}

/** The "paste a token" card, shown when there is none or the daemon refused it. */
export function tokenForm(message: string, onToken: (token: string) => void): HTMLElement {
  const input = h('input', {
    type: 'password',
    name: 'token',
    id: 'token-input',
    'data-testid': 'token-input',
    placeholder: 'tidal_…',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
  });
  const form = h(
    'form',
    { class: 'token-form' },
    h('label', { for: 'token-input' }, 'API token'),
    input,
    h('button', { type: 'submit', 'data-testid': 'token-submit' }, 'Connect'),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const t = input.value.trim();
    if (t) onToken(t);
  });
  const card = h(
    'section',
    { class: 'card token-card', 'data-testid': 'token-form' },
    h('h2', {}, 'Connect to tidal serve'),
    message ? h('p', { class: 'error-banner', role: 'alert', 'data-testid': 'token-message' }, message) : null,
    h('p', { class: 'note' }, 'Open the URL the daemon prints at start (it carries #token=…), or paste a token. It is kept only in this browser tab.'),
    form,
  );
  queueMicrotask(() => input.focus());
  return card;
}
