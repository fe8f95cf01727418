/**
 * The secret scanner's side of a test (test/security/exec-scanner.cjs, run by `exec` inside an
 * agent's sandbox or Pod): the needles it is given — each secret's first characters, length and
 * SHA-256, never the secret itself, so neither its command line nor its memory holds one — the
 * command that runs it through `exec`, and the report it prints.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

const SCANNER = path.join(import.meta.dirname, '../security/exec-scanner.cjs');

export interface Needle {
  name: string;
  prefix: string;
  length: number;
  sha256: string;
}

export const needle = (name: string, value: string): Needle => ({
  name,
  prefix: value.slice(0, 6),
  length: value.length,
  sha256: createHash('sha256').update(value).digest('hex'),
});

export interface ScanReport {
  found: Array<{ name: string; where: string }>;
  processes: Array<{ pid: string; comm: string; environ: boolean; fds: number; root: boolean; memBytes: number }>;
  sockets: Array<{ path: string; result: string }>;
  filesScanned: number;
}

/** The `exec` command that writes the scanner to /tmp and runs it with `env` before it (and a mode such as `sockets-only`). */
export async function scanCommand(env: string, needles: Needle[], mode = ''): Promise<string> {
  const source = (await readFile(SCANNER)).toString('base64');
  const args = Buffer.from(JSON.stringify(needles)).toString('base64');
  return `echo ${source} | base64 -d > /tmp/scan.cjs && ${env} node /tmp/scan.cjs ${args} ${mode}`;
}

/** The report in a command's output. */
export const scanReport = (output: string): ScanReport => JSON.parse(output.slice(output.indexOf('{'))) as ScanReport;
