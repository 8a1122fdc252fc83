// What every dashboard section provides to the app shell.
import type { Client, Cluster } from './api';

export interface Context {
  client: Client;
  /** The latest /v1/cluster answer, null until the first one arrives. */
  cluster: Cluster | null;
}

export interface Section {
  readonly id: string;
  readonly title: string;
  readonly root: HTMLElement;
  /** Called on every 2 s tick while the section is shown (and once when shown). */
  refresh(ctx: Context): Promise<void>;
}

/** The frame every section shares: a heading, an error line, then content. */
export function card(title: string, ...content: Node[]): HTMLElement {
  const c = document.createElement('section');
  c.className = 'card';
  const hd = document.createElement('h2');
  hd.textContent = title;
  c.append(hd, ...content);
  return c;
}
