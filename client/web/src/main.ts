/**
 * The web client. Pages are plain functions returning elements (pages/); sign-in methods are
 * modules under signin/, the second factor's under mfa/; auth landing pages (/auth/callback, /auth/verify) register their paths
 * with the router. Signed in, every other path is a page of the app inside the layout.
 */
import './pages/callback.js';
import './pages/verify.js';
import { awaitingSecondFactor, onSecondStepNeeded, onSessionLost, signedIn } from './api.js';
import { busyNotice } from './busy.js';
import { h } from './dom.js';
import { chatPage } from './pages/chat.js';
import { connectorsPage } from './pages/connectors.js';
import { filesPage } from './pages/files.js';
import { accountPage } from './pages/account.js';
import { adminPage } from './pages/admin.js';
import { layout, signedOut, signingOutEverywhere } from './pages/layout.js';
import { messengerPage } from './pages/messenger.js';
import { secondStepPage } from './mfa/second-step.js';
import { signInPage } from './pages/signin.js';
import { subagentsPage } from './pages/subagents.js';
import { memoryPage } from './pages/memory.js';
import { tasksPage } from './pages/tasks.js';
import { navigate, rerender, startRouter } from './router.js';

const PAGES: Record<string, () => HTMLElement> = {
  '/': chatPage,
  '/chat': chatPage,
  '/files': filesPage,
  '/subagents': subagentsPage,
  '/tasks': tasksPage,
  '/memory': memoryPage,
  '/messenger': messengerPage,
  '/connectors': connectorsPage,
  '/account': accountPage,
  /** Operators only: the service refuses everyone else and the page says so. */
  '/admin': adminPage,
};

const notFound = () => h('div', {}, h('h1', { class: 'page-title', tabIndex: -1 }, 'Not found'), h('p', {}, 'There is no page here.'));

let notice: string | undefined;
/** The sign-in page last drawn. */
let signInShown: HTMLElement | undefined;
onSessionLost(() => {
  // Signed out already (a call still in flight at sign-out found its session ended): the sign-in
  // page is up, and drawing it again would wipe what the user has begun to type there. Or signing
  // out everywhere: that draws it once it is done, with no "session has ended".
  if (signInShown?.isConnected || signingOutEverywhere()) return;
  notice = 'Your session has ended. Please sign in again.';
  signedOut();
});

onSecondStepNeeded(rerender);

const app = document.getElementById('app') as HTMLElement;
app.before(busyNotice(document));
startRouter(app, () => {
  // One factor of two: nothing but the second step (or signing out) until it is passed.
  if (awaitingSecondFactor()) return secondStepPage(() => navigate(location.pathname));
  if (signedIn()) return layout(PAGES[location.pathname] ?? notFound);
  signInShown = signInPage(() => {
    notice = undefined;
    navigate(location.pathname);
  }, notice);
  return signInShown;
});
