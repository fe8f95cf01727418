/**
 * The second step of a sign-in (docs/api.md, "Second factor"): after any first factor, an account
 * with an authenticator app holds an `aal1` session that can do nothing else until the app's
 * current code (or a recovery code) is entered here. Signing out is the other way out.
 */
import { account } from '../api.js';
import { alertBox, h } from '../dom.js';
import { icon } from '../icons.js';
import { signOut } from '../pages/layout.js';
import { PRODUCT_NAME } from '../router.js';

function codeForm(
  id: string,
  label: string,
  input: Partial<HTMLInputElement> & Record<string, unknown>,
  send: (value: string) => Promise<unknown>,
  done: () => void,
) {
  const alert = alertBox();
  const field = h('input', { id, name: id, type: 'text', required: true, autocomplete: 'one-time-code', spellcheck: false, ...input });
  const submit = h('button', { type: 'submit' }, 'Verify');
  const form = h('form', {}, h('label', { for: id }, label), field, h('div', { class: 'row' }, submit), alert.el);
  form.onsubmit = async (e) => {
    e.preventDefault();
    alert.clear();
    submit.disabled = true;
    try {
      await send(field.value.trim());
      done();
    } catch (error) {
      submit.disabled = false;
      field.select();
      alert.fail(error, submit);
    }
  };
  return { form, field };
}

export function secondStepPage(onPassed: () => void): HTMLElement {
  const totp = codeForm(
    'mfa-code',
    '6-digit code',
    { inputMode: 'numeric', pattern: '[0-9]{6}', maxLength: 6 },
    (code) => account.verifySecondFactor({ code }),
    onPassed,
  );
  const recovery = codeForm(
    'mfa-recovery-code',
    'Recovery code',
    { maxLength: 64, autocapitalize: 'off' },
    (code) => account.verifySecondFactor({ recovery_code: code }),
    onPassed,
  );
  const out = h('button', { type: 'button', class: 'link' }, 'Sign out');
  out.onclick = () => void signOut(false);
  queueMicrotask(() => totp.field.focus());
  return h(
    'main',
    { class: 'signin' },
    h('p', { class: 'brand signin-brand' }, h('img', { src: '/favicon.svg', alt: '', width: 28, height: 28 }), PRODUCT_NAME),
    h('h1', { class: 'page-title', tabIndex: -1 }, icon('shield'), ' Two-step verification'),
    h(
      'section',
      { 'aria-labelledby': 'mfa-step-title' },
      h('h2', { id: 'mfa-step-title' }, 'Enter the code from your authenticator app'),
      h('p', {}, 'This account is protected by a second step. Open your authenticator app and enter the code it shows now for this account.'),
      totp.form,
      h(
        'details',
        { class: 'recovery' },
        h('summary', {}, 'Lost your phone? Use a recovery code'),
        h('p', {}, 'Each of the recovery codes you saved when you added the app works once.'),
        recovery.form,
      ),
    ),
    h('p', {}, 'Not you, or another account? ', out),
  );
}
