import { errorCode, errorMessage, isSessionError, retryAfter, secondFactorRequired, sessionLost } from './api.js';
import { currentSessionId } from './session.js';

/** Tiny DOM helper: h('button', {type: 'button', onclick}, 'Text'). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<Omit<HTMLElementTagNameMap[K], 'style'>> & Record<string, unknown> = {},
  ...children: Array<Node | string | null | undefined | false>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined) continue;
    if (name.startsWith('data-') || name.startsWith('aria-') || name === 'role' || name === 'for' || name === 'class') el.setAttribute(name, String(value));
    else (el as unknown as Record<string, unknown>)[name] = value;
  }
  el.append(...children.filter((c): c is Node | string => c !== null && c !== undefined && c !== false));
  return el;
}

export interface AlertBox {
  el: HTMLElement;
  show(message: string): void;
  clear(): void;
  /**
   * Shows a failure. Rate limits with Retry-After count down (and keep `button` disabled until
   * then); a lost session goes to sign-in; a session waiting for its second factor to that step.
   */
  fail(error: unknown, button?: HTMLButtonElement): void;
}

/**
 * Shows a failure where screen readers announce it. It belongs to the session its view was drawn
 * for (every sign-in, sign-out or switch draws the page anew): a call of that view answered 401
 * after the browser moved on to another session ends nothing (api.ts, `sessionLost`).
 */
export function alertBox(): AlertBox {
  const el = h('p', { role: 'alert' });
  const session = currentSessionId();
  let timer: ReturnType<typeof setInterval> | undefined;
  const stop = () => {
    if (timer) clearInterval(timer);
    timer = undefined;
  };
  return {
    el,
    show: (message) => {
      stop();
      el.textContent = message;
    },
    clear: () => {
      stop();
      el.textContent = '';
    },
    fail(error, button) {
      stop();
      if (isSessionError(error)) return sessionLost(session);
      if (errorCode(error) === 'MFA_REQUIRED') void secondFactorRequired();
      const message = errorMessage(error);
      const wait = retryAfter(error);
      if (!wait) {
        el.textContent = message;
        return;
      }
      const until = Date.now() + wait * 1000;
      const tick = () => {
        const left = Math.ceil((until - Date.now()) / 1000);
        if (left <= 0 || !el.isConnected) {
          stop();
          if (button) button.disabled = false;
          el.textContent = el.isConnected ? `${message} You can try again now.` : '';
          return;
        }
        el.textContent = `${message} Try again in ${left} s.`;
        el.dataset.countdown = String(left);
      };
      if (button) button.disabled = true;
      tick();
      timer = setInterval(tick, 1000);
    },
  };
}

/**
 * A Copy button and the status beside it ("Copied.", or `fallback` where the clipboard is refused):
 * `label` may hold an icon.
 */
export function copyButton(text: string, testId: string, fallback: string, ...label: Array<Node | string>): { button: HTMLButtonElement; status: HTMLElement } {
  const button = h('button', { type: 'button', class: 'small', 'data-testid': testId }, ...(label.length ? label : ['Copy']));
  const status = h('span', { role: 'status', class: 'muted' });
  button.onclick = async () => {
    try {
      await navigator.clipboard.writeText(text);
      status.textContent = 'Copied.';
    } catch {
      status.textContent = fallback;
    }
  };
  return { button, status };
}

/** A heading that receives focus when its page opens (screen readers announce the new page). */
export function pageHeading(text: string): HTMLHeadingElement {
  return h('h1', { tabIndex: -1, class: 'page-title' }, text);
}

export function formatBytes(size: number): string {
  if (size < 1024) return `${size} B`;
  if (size < 1024 * 1024) return `${(size / 1024).toFixed(1)} kB`;
  return `${(size / 1024 / 1024).toFixed(1)} MB`;
}
