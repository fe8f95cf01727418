/**
 * The Account page's "Two-step verification" section: the authenticator app the account has (with
 * its last use and the recovery codes left, and a way to remove it), or the way to add one — a QR
 * code drawn here from the otpauth:// URI (mfa/qr.ts; the key typed by hand for apps that cannot
 * scan), the app's code to confirm it, then the ten recovery codes, shown this once, to copy or
 * download.
 */
import { account, api, errorCode } from '../api.js';
import { type AlertBox, alertBox, copyButton, h } from '../dom.js';
import { icon } from '../icons.js';
import { qrCode } from './qr.js';

type Factors = Awaited<ReturnType<typeof api.account.mfa.list.query>>;

/** Server times are UTC without a zone suffix. */
const when = (utc: string | null) => (utc ? new Date(`${utc}Z`).toLocaleString() : 'never');

/** The key as apps show it: groups of four. */
const grouped = (secret: string) => secret.replace(/(.{4})(?=.)/g, '$1 ');

function recoveryCodesPanel(codes: string[], onSaved: () => void): HTMLElement {
  const text = `${codes.join('\n')}\n`;
  const copy = copyButton(text, 'copy-recovery-codes', 'Select the codes to copy them.', icon('copy'), ' Copy');
  const download = h(
    'a',
    {
      class: 'button small',
      href: URL.createObjectURL(new Blob([text], { type: 'text/plain' })),
      download: 'recovery-codes.txt',
      'data-testid': 'download-recovery-codes',
    },
    icon('download'),
    ' Download',
  );
  const saved = h('button', { type: 'button', 'data-testid': 'recovery-codes-saved' }, 'I have saved them');
  saved.onclick = () => {
    URL.revokeObjectURL(download.href);
    onSaved();
  };
  return h(
    'div',
    { class: 'recovery-codes' },
    h('h3', { tabIndex: -1 }, 'Your recovery codes'),
    h(
      'p',
      {},
      'Two-step verification is on. Keep these codes somewhere safe: if you lose your phone, each one lets you sign in once. They are shown only now.',
    ),
    h('ol', { 'data-testid': 'recovery-codes' }, ...codes.map((code) => h('li', {}, h('code', {}, code)))),
    h('div', { class: 'row' }, copy.button, download, copy.status),
    h('div', { class: 'row' }, saved),
  );
}

function enrolPanel(alert: AlertBox, reload: () => void): HTMLElement {
  const panel = h('div', { class: 'mfa-enrol' });
  const start = h('button', { type: 'button', 'data-testid': 'add-authenticator' }, icon('phone'), ' Add an authenticator app');
  start.onclick = async () => {
    alert.clear();
    start.disabled = true;
    try {
      const enrolment = await api.account.mfa.enrolTotp.mutate();
      const code = h('input', {
        id: 'totp-confirm-code',
        name: 'code',
        type: 'text',
        required: true,
        inputMode: 'numeric',
        pattern: '[0-9]{6}',
        maxLength: 6,
        autocomplete: 'one-time-code',
      });
      const confirm = h('button', { type: 'submit' }, 'Turn on');
      const form = h('form', {}, h('label', { for: 'totp-confirm-code' }, '6-digit code from the app'), code, h('div', { class: 'row' }, confirm));
      form.onsubmit = async (e) => {
        e.preventDefault();
        alert.clear();
        confirm.disabled = true;
        try {
          const { recovery_codes } = await api.account.mfa.confirmTotp.mutate({ factor_id: enrolment.factor_id, code: code.value.trim() });
          // This session passed the factor: a fresh token says so (aal2), which the admin pages need.
          await account.refresh().catch(() => null);
          panel.replaceChildren(recoveryCodesPanel(recovery_codes, reload));
          panel.querySelector<HTMLElement>('h3')?.focus();
        } catch (error) {
          confirm.disabled = false;
          alert.fail(error, confirm);
        }
      };
      panel.replaceChildren(
        h('p', {}, 'Scan this QR code with your authenticator app (any app for “TOTP” codes), then enter the 6-digit code it shows.'),
        qrCode(enrolment.otpauth_uri, 'QR code for your authenticator app'),
        h(
          'details',
          {},
          h('summary', {}, 'Cannot scan it? Enter a key instead'),
          h('p', {}, 'Key (time-based, 6 digits, 30 seconds): ', h('code', { 'data-testid': 'totp-secret' }, grouped(enrolment.secret))),
        ),
        form,
      );
      code.focus();
    } catch (error) {
      start.disabled = false;
      alert.fail(error, start);
    }
  };
  panel.append(
    h('p', {}, 'Add a second step to signing in: after your e-mail or another method, you enter the code your authenticator app shows.'),
    h('div', { class: 'row' }, start),
  );
  return panel;
}

function factorList(view: Factors, alert: AlertBox, reload: () => void): HTMLElement {
  const items = view.factors
    .filter((factor) => factor.confirmed)
    .map((factor) => {
      const remove = h('button', { type: 'button', class: 'small danger', 'aria-label': 'Remove authenticator app' }, 'Remove');
      remove.onclick = async () => {
        if (!confirm('Turn off two-step verification? Signing in will then need only one step.')) return;
        alert.clear();
        try {
          await api.account.mfa.remove.mutate({ factor_id: factor.id });
          reload();
        } catch (error) {
          if (errorCode(error) === 'MFA_REQUIRED') alert.show('To remove it, sign out, sign in again and enter a code from the app.');
          else alert.fail(error);
        }
      };
      return h(
        'li',
        { 'data-testid': 'mfa-factor' },
        icon('phone'),
        ` Authenticator app · added ${when(factor.created_at)} · last used ${when(factor.last_used_at)} `,
        remove,
      );
    });
  return h(
    'div',
    {},
    h('ul', { class: 'sessions' }, ...items),
    h('p', { 'data-testid': 'recovery-codes-left' }, `${view.recovery_codes_left} of 10 recovery codes left.`),
  );
}

export async function secondFactorSection(fullAccount: boolean, reload: () => void): Promise<HTMLElement> {
  const alert = alertBox();
  const title = h('h2', { id: 'mfa-title' }, icon('shield'), ' Two-step verification');
  if (!fullAccount)
    return h(
      'section',
      { 'aria-labelledby': 'mfa-title' },
      title,
      h('p', {}, 'Add an e-mail address or a provider above first: two-step verification protects full accounts.'),
    );
  const view = await api.account.mfa.list.query();
  const active = view.factors.some((factor) => factor.confirmed);
  return h('section', { 'aria-labelledby': 'mfa-title' }, title, active ? factorList(view, alert, reload) : enrolPanel(alert, reload), alert.el);
}
