/**
 * The CAPTCHA widget, only when the service asks for one (GET /auth/captcha): Turnstile or
 * hCaptcha, whose script is loaded from the provider then and only then. Each form that needs a
 * token holds its own widget; a token is good for one call, so the form resets it after each.
 */
import { account } from '../api.js';
import { h } from '../dom.js';

type Provider = 'turnstile' | 'hcaptcha';

/** The part of both providers' explicit-render API we use (they share it). */
interface WidgetApi {
  render(el: HTMLElement, options: { sitekey: string; callback: (token: string) => void; 'expired-callback': () => void }): string;
  reset(id?: string): void;
}

const SCRIPTS: Record<Provider, string> = {
  turnstile: 'https://challenges.cloudflare.com/turnstile/v0/api.js?render=explicit',
  hcaptcha: 'https://js.hcaptcha.com/1/api.js?render=explicit',
};

let config: ReturnType<typeof account.captchaConfig> | undefined;
let script: Promise<WidgetApi> | undefined;

function loadScript(provider: Provider): Promise<WidgetApi> {
  script ??= new Promise<WidgetApi>((resolve, reject) => {
    const el = h('script', { src: SCRIPTS[provider], async: true });
    el.onload = () => {
      const api = (window as unknown as Partial<Record<Provider, WidgetApi>>)[provider];
      if (api) resolve(api);
      else reject(new Error('no widget'));
    };
    el.onerror = () => reject(new Error('not loaded'));
    document.head.append(el);
  }).catch((error: unknown) => {
    script = undefined; // the next form tries again
    throw error;
  });
  return script;
}

export interface CaptchaBox {
  /** Empty when the service needs no CAPTCHA. */
  el: HTMLElement;
  /** The solved token, or undefined (none needed, or not solved yet: the service then says so). */
  token(): string | undefined;
  /** After each call: the token has been spent. */
  reset(): void;
}

export function captchaBox(): CaptchaBox {
  const el = h('div', { class: 'captcha', 'data-testid': 'captcha' });
  let token: string | undefined;
  let widget: { api: WidgetApi; id: string } | undefined;
  config ??= account.captchaConfig();
  config
    .then(async ({ provider, site_key }) => {
      if (!provider || !site_key) return;
      const api = await loadScript(provider);
      const id = api.render(el, {
        sitekey: site_key,
        callback: (solved) => (token = solved),
        'expired-callback': () => (token = undefined),
      });
      widget = { api, id };
    })
    .catch(() => {
      config = undefined;
      el.textContent = 'The CAPTCHA could not be loaded; reload the page to try again.';
    });
  return {
    el,
    token: () => token,
    reset() {
      token = undefined;
      widget?.api.reset(widget.id);
    },
  };
}
