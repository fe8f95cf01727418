/**
 * E-mail sign-in: request a message (it holds a link and a 6-digit code), then type the code
 * here, or open the link (pages/verify.ts POSTs its token). A signed-in guest who verifies an
 * address is upgraded in place (the SDK sends a guest's token on the request and on verify).
 */
import { account } from '../api.js';
import { alertBox, h } from '../dom.js';
import { rememberAsked } from './asked.js';
import { captchaBox } from './captcha.js';
import type { SignInMethod } from './method.js';

/**
 * `link`: on the Account page the address is linked to whichever account is signed in; on the sign-in page a signed-in guest is
 * upgraded. Either way the mail is asked for with the same token the code is traded with: only the account that asked is joined.
 */
export function emailForm(done: Parameters<SignInMethod['render']>[0], idPrefix = 'email', link = false): HTMLElement {
  const trade = link ? account.linkEmail : account.verifyEmail;
  const alert = alertBox();
  const email = h('input', { type: 'email', id: `${idPrefix}-address`, name: 'email', required: true, autocomplete: 'email', inputMode: 'email' });
  const request = h('button', { type: 'submit' }, 'Send me a sign-in code');
  const captcha = captchaBox();
  const requestForm = h('form', {}, h('label', { for: `${idPrefix}-address` }, 'E-mail address'), email, captcha.el, h('div', { class: 'row' }, request));

  const code = h('input', {
    type: 'text',
    id: `${idPrefix}-code`,
    name: 'code',
    required: true,
    inputMode: 'numeric',
    autocomplete: 'one-time-code',
    pattern: '[0-9]{6}',
    maxLength: 6,
    'aria-describedby': `${idPrefix}-sent`,
  });
  const sent = h('p', { id: `${idPrefix}-sent`, role: 'status' });
  const verify = h('button', { type: 'submit' }, 'Sign in');
  const codeForm = h('form', { hidden: true }, sent, h('label', { for: `${idPrefix}-code` }, '6-digit code'), code, h('div', { class: 'row' }, verify));

  requestForm.onsubmit = async (e) => {
    e.preventDefault();
    alert.clear();
    request.disabled = true;
    try {
      const sending = captcha.token();
      captcha.reset(); // spent by this request, whatever its answer
      const { message } = await account.requestEmailSignIn(email.value.trim(), { captcha: sending, link });
      rememberAsked(email.value);
      sent.textContent = `${message} Enter the 6-digit code from the message, or open its link.`;
      codeForm.hidden = false;
      code.focus();
      request.disabled = false;
    } catch (error) {
      request.disabled = false;
      alert.fail(error, request);
    }
  };
  codeForm.onsubmit = async (e) => {
    e.preventDefault();
    alert.clear();
    verify.disabled = true;
    try {
      done(await trade({ email: email.value.trim(), code: code.value.trim() }));
    } catch (error) {
      verify.disabled = false;
      alert.fail(error, verify);
    }
  };
  return h('div', { class: 'email-form' }, requestForm, codeForm, alert.el);
}

export const emailMethod: SignInMethod = {
  id: 'email',
  render(done) {
    return h('section', { 'aria-labelledby': 'email-title' }, h('h2', { id: 'email-title' }, 'E-mail'), emailForm(done));
  },
};
