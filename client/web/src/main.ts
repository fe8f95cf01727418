/**
 * The web client. Pages are plain functions returning elements (pages/); sign-in methods are
 * modules under signin/; auth landing pages register their paths with the router.
 */
import './pages/callback.js';
import { homePage } from './pages/home.js';
import { signInPage } from './pages/signin.js';
import { navigate, startRouter } from './router.js';
import { loadTokens } from './session.js';

const app = document.getElementById('app') as HTMLElement;
startRouter(app, () => (loadTokens() ? homePage(() => navigate('/')) : signInPage(() => navigate('/'))));
