/**
 * A sign-in method is a section of the sign-in page. Each lives in its own module here and
 * calls `done(pair)` when it has a token pair; the page does the rest.
 */
import type { TokenPair } from '../session.js';

export interface SignInMethod {
  id: string;
  render(done: (pair: TokenPair) => void): HTMLElement;
}
