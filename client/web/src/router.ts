/**
 * A small path router. Pages register with `route(path, page)`; anything unregistered shows
 * the fallback (sign-in or home). Auth flows land on their own paths (`/auth/callback`, …).
 */
type Page = () => HTMLElement;

const routes = new Map<string, Page>();
let render: () => void = () => undefined;

export function route(path: string, page: Page): void {
  routes.set(path, page);
}

export function navigate(path: string): void {
  history.replaceState(null, '', path);
  render();
}

export function startRouter(app: HTMLElement, fallback: Page): void {
  render = () => app.replaceChildren((routes.get(location.pathname) ?? fallback)());
  render();
}
