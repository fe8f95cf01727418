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
import { layout, leftInAnotherTab, signedOut, signingOutEverywhere } from './pages/layout.js';
import { messengerPage } from './pages/messenger.js';
import { secondStepPage } from './mfa/second-step.js';
import { signInPage } from './pages/signin.js';
import { subagentsPage } from './pages/subagents.js';
import { memoryPage } from './pages/memory.js';
import { tasksPage } from './pages/tasks.js';
import { navigate, rerender, startRouter } from './router.js';
import { currentSessionId, currentUserId } from './session.js';
import { forgetMe, refreshAccountInfo } from './who.js';

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
/** What the page was last drawn for: its user and session (null: signed out) and whether it waited for the second step. */
const drawing = () => ({ user: currentUserId(), session: currentSessionId(), secondStep: awaitingSecondFactor() });
let drawnFor = drawing();
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
// Tabs share the tokens: when another one signs out, or in to another account, or passes the
// second step, this one follows. Without it, a tab still showing the account that left would send
// what is typed into it to the next one. A rotation changes nothing here, nor does a new session
// of the same account (a link or a guest upgrade): the page stays, its header is asked again. The
// sign-in landing pages (/auth/…) finish their own flow first.
addEventListener('storage', (event) => {
  if ((event.key !== null && event.key !== 'agent.tokens') || location.pathname.startsWith('/auth/')) return;
  const now = drawing();
  if (now.user !== drawnFor.user) return leftInAnotherTab();
  if (now.secondStep !== drawnFor.secondStep) return rerender();
  if (now.session !== drawnFor.session) {
    drawnFor = now;
    forgetMe();
    refreshAccountInfo();
  }
});

startRouter(app, () => {
  drawnFor = drawing();
  // One factor of two: nothing but the second step (or signing out) until it is passed.
  if (awaitingSecondFactor()) return secondStepPage(() => navigate(location.pathname));
  if (signedIn()) return layout(PAGES[location.pathname] ?? notFound);
  signInShown = signInPage(() => {
    notice = undefined;
    navigate(location.pathname);
  }, notice);
  return signInShown;
});
