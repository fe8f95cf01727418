/**
 * A small path router. Pages register with `route(path, page)`; anything unregistered shows
 * the fallback (sign-in, or the signed-in app). `go(path)` is an in-app link (history entry,
 * focus moves to the new page's heading, or to the element the page marks `data-autofocus`);
 * `navigate(path)` replaces the entry (auth flows).
 * A page registers its cleanup (subscriptions, timers) with `onLeave`.
 */
type Page = () => HTMLElement;

const routes = new Map<string, Page>();
let render: (focus: boolean) => void = () => undefined;
const cleanups: Array<() => void> = [];

export function route(path: string, page: Page): void {
  routes.set(path, page);
}

/** Runs when the current page is replaced. */
export function onLeave(cleanup: () => void): void {
  cleanups.push(cleanup);
}

export function navigate(path: string): void {
  history.replaceState(null, '', path);
  render(true);
}

export function go(path: string): void {
  if (path !== location.pathname + location.search) history.pushState(null, '', path);
  render(true);
}

/** The current page again (e.g. after sign-out). */
export function rerender(): void {
  render(true);
}

/** The product's name, in every tab title ("Sign in · Agent Accounts"). */
export const PRODUCT_NAME = 'Agent Accounts';

export function startRouter(app: HTMLElement, fallback: Page): void {
  render = (focus) => {
    for (const cleanup of cleanups.splice(0)) cleanup();
    app.replaceChildren((routes.get(location.pathname) ?? fallback)());
    // The tab says which page this is: the navigation's current entry ("Chat", not the open
    // chat's title), else the page's heading ("Sign in", "Admin").
    const title = app.querySelector<HTMLElement>('.page-title');
    const page = (app.querySelector('nav [aria-current="page"]') ?? title)?.textContent?.trim();
    document.title = page ? `${page} · ${PRODUCT_NAME}` : PRODUCT_NAME;
    // A page that names its first focus gets it in the same task as it appears (the chat's message
    // box): focusing it a frame later lost what was typed in between to the heading (issue 43).
    const first = app.querySelector<HTMLElement>('[data-autofocus]');
    if (first) first.focus();
    else if (focus) title?.focus();
  };
  addEventListener('popstate', () => render(true));
  render(false);
}
