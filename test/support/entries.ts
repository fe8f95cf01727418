/**
 * What tests run as processes of their own, started as production starts them: from the compiled
 * build (dist/), which vitest's global set-up (test/support/global-setup.ts) makes current before
 * the first test file. Through tsx each start compiled the services' sources again (an account
 * service or a CLI: 1–2 s of CPU more per start on this machine); tsx remains only for a build
 * that went stale while tests ran.
 */
import path from 'node:path';
import { DIST_DIR, REPO_ROOT, serverBuildIsCurrent } from '../../server/common/build.js';

function entry(source: string): string[] {
  return serverBuildIsCurrent()
    ? [path.join(DIST_DIR, source.replace(/\.ts$/, '.js'))]
    : ['--import', import.meta.resolve('tsx'), path.join(REPO_ROOT, source)];
}

/** Arguments for `process.execPath` that run a service: `server/<service>/main.ts`. */
export function serviceEntry(service: 'account' | 'agent'): string[] {
  return entry(`server/${service}/main.ts`);
}

/** Arguments for `process.execPath` that run an operator CLI of scripts/ (what `npm run agents`, `admin` and `db:migrate` run). */
export function cliEntry(cli: 'agents' | 'admin' | 'db'): string[] {
  return entry(`scripts/${cli}.ts`);
}
