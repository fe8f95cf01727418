/**
 * Before any test file: local agents run from the compiled tree (dist/), so a build older than its
 * sources would run yesterday's agent (or none, inside the sandbox). Rebuilt only when stale: under
 * `npm test`, which builds first, this is one walk of the sources.
 */
import { buildIfStale } from '../../scripts/build.js';

export default async function setup(): Promise<void> {
  await buildIfStale({ web: false });
}
