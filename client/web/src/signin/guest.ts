import { api, errorMessage } from '../api.js';
import { alertBox, h } from '../dom.js';
import type { SignInMethod } from './method.js';

const DEVICE_KEY = 'agent.device_id';

function deviceId(): string {
  let id = localStorage.getItem(DEVICE_KEY);
  if (!id) {
    id = crypto.randomUUID();
    localStorage.setItem(DEVICE_KEY, id);
  }
  return id;
}

export const guestMethod: SignInMethod = {
  id: 'guest',
  render(done) {
    const alert = alertBox();
    const button = h('button', { type: 'button', 'data-testid': 'guest-signin' }, 'Continue as guest');
    button.onclick = async () => {
      alert.clear();
      try {
        done(await api.auth.guest.signIn.mutate({ device_id: deviceId() }));
      } catch (error) {
        alert.show(errorMessage(error));
      }
    };
    return h('section', { 'aria-labelledby': 'guest-title' }, h('h2', { id: 'guest-title' }, 'Guest'), button, alert.el);
  },
};
