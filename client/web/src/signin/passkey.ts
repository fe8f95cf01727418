/**
 * Passkeys in the browser (@simplewebauthn/browser over navigator.credentials): sign in with a
 * passkey on the sign-in page; add one to the signed-in account on the Account page (a guest is
 * upgraded by it). The server hands out the options and checks the answers (auth/passkey).
 */
import {
  browserSupportsWebAuthn,
  startAuthentication,
  startRegistration,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
} from '@simplewebauthn/browser';
import { api, errorMessage } from '../api.js';
import { alertBox, h } from '../dom.js';
import type { TokenPair } from '../session.js';
import type { SignInMethod } from './method.js';

const UNSUPPORTED = 'This browser cannot use passkeys.';

/** The browser's own refusal (the person cancelled, or no passkey fits) reads better than its exception text. */
function passkeyFailure(error: unknown): string {
  const name = error instanceof Error ? error.name : '';
  if (name === 'NotAllowedError' || name === 'AbortError') return 'No passkey was used, so nothing changed.';
  return errorMessage(error);
}

/** Registers a passkey on this device for the signed-in account; the answer is a new session's pair. */
export async function addPasskey(name: string | undefined): Promise<TokenPair> {
  const options = (await api.auth.passkey.registerOptions.mutate({})) as unknown as PublicKeyCredentialCreationOptionsJSON;
  const response = await startRegistration({ optionsJSON: options });
  return api.auth.passkey.registerVerify.mutate({ response: response as never, ...(name ? { name } : {}) });
}

export function addPasskeyForm(done: (pair: TokenPair) => void): HTMLElement {
  const alert = alertBox();
  const name = h('input', { type: 'text', id: 'passkey-name', name: 'passkey-name', maxLength: 64, placeholder: 'e.g. Laptop' });
  const add = h('button', { type: 'submit', 'data-testid': 'passkey-add' }, 'Add a passkey');
  const form = h('form', {}, h('label', { for: 'passkey-name' }, 'Passkey name (optional)'), name, h('div', { class: 'row' }, add), alert.el);
  form.onsubmit = async (e) => {
    e.preventDefault();
    alert.clear();
    if (!browserSupportsWebAuthn()) return alert.show(UNSUPPORTED);
    add.disabled = true;
    try {
      done(await addPasskey(name.value.trim() || undefined));
    } catch (error) {
      alert.show(passkeyFailure(error));
    } finally {
      add.disabled = false;
    }
  };
  return form;
}

export const passkeyMethod: SignInMethod = {
  id: 'passkey',
  render(done) {
    const alert = alertBox();
    const button = h('button', { type: 'button', 'data-testid': 'passkey-signin' }, 'Sign in with a passkey');
    button.onclick = async () => {
      alert.clear();
      if (!browserSupportsWebAuthn()) return alert.show(UNSUPPORTED);
      button.disabled = true;
      try {
        const options = (await api.auth.passkey.loginOptions.mutate({}, { context: { auth: 'none' } })) as unknown as PublicKeyCredentialRequestOptionsJSON;
        const response = await startAuthentication({ optionsJSON: options });
        done(await api.auth.passkey.loginVerify.mutate({ response: response as never }, { context: { auth: 'none' } }));
      } catch (error) {
        alert.show(passkeyFailure(error));
      } finally {
        button.disabled = false;
      }
    };
    return h('section', { 'aria-labelledby': 'passkey-title' }, h('h2', { id: 'passkey-title' }, 'Passkey'), button, alert.el);
  },
};
