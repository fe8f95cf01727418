import { newDeviceId } from '../../../sdk/account.js';
import { account } from '../api.js';
import { alertBox, h } from '../dom.js';
import { captchaBox } from './captcha.js';
import type { SignInMethod } from './method.js';

const DEVICE_KEY = 'agent.device_id';

/** One random id per browser profile (122 bits): it is the guest's only credential. */
function deviceId(): string {
  let id = localStorage.getItem(DEVICE_KEY);
  // An id from an older client that the service now refuses (under 16 characters) is replaced.
  if (!id || id.length < 16) {
    id = newDeviceId();
    localStorage.setItem(DEVICE_KEY, id);
  }
  return id;
}

export const guestMethod: SignInMethod = {
  id: 'guest',
  render(done) {
    const alert = alertBox();
    const captcha = captchaBox();
    const button = h('button', { type: 'button', 'data-testid': 'guest-signin' }, 'Continue as guest');
    button.onclick = async () => {
      alert.clear();
      try {
        done(await account.signInAsGuest(deviceId(), { captcha: captcha.token() }));
      } catch (error) {
        captcha.reset();
        alert.fail(error, button);
      }
    };
    return h(
      'section',
      { class: 'guest-method', 'aria-labelledby': 'guest-title' },
      h('h2', { id: 'guest-title' }, 'New here?'),
      h('p', {}, 'Start chatting now, no sign-up. Link an e-mail address or a provider later to keep the account.'),
      captcha.el,
      button,
      alert.el,
    );
  },
};
