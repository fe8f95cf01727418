/**
 * Every link in README.md, CONTRIBUTING.md and docs/ leads to a file of the repository and, with a `#fragment`,
 * to a heading of that file (GitHub's anchor rules); nothing points outside the repository. The
 * pages name the code where it is (a path in backticks names a file or folder that exists), and
 * README's documentation table lists every page of docs/.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const pages = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fence = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    const heading = !fence && /^#{1,6} (.+)$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count ? `${base}-${count}` : base);
  }
  return out;
}

/** Inline links and images outside code: `[text](target)`. */
function links(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

function problems(page: string): string[] {
  const found: string[] = [];
  for (const target of links(readFileSync(path.join(root, page), 'utf8'))) {
    if (/^(https?:|mailto:)/.test(target)) continue;
    const [file = '', fragment] = target.split('#');
    const resolved = file ? path.resolve(root, path.dirname(page), decodeURIComponent(file)) : path.join(root, page);
    if (path.relative(root, resolved).startsWith('..') || path.isAbsolute(file)) {
      found.push(`${page}: ${target} points outside the repository`);
      continue;
    }
    if (!existsSync(resolved)) {
      found.push(`${page}: ${target} names no file`);
      continue;
    }
    if (fragment && statSync(resolved).isFile() && resolved.endsWith('.md') && !anchors(readFileSync(resolved, 'utf8')).has(fragment)) {
      found.push(`${page}: ${target} names no heading of ${path.relative(root, resolved)}`);
    }
  }
  return found;
}

/** Paths of the repository named in backticks (`server/account/events/outbox.ts`), placeholders (`<area>`, `{a,b}`, `*`) left out. */
function namedPaths(markdown: string): string[] {
  return [...markdown.matchAll(/`((?:server|client|contracts|rest-bridge|test|e2e|bench|scripts|prisma|deploy)\/[^`\s]*)`/g)]
    .map((m) => m[1]!)
    .filter((named) => !/[<>{}*…|]/.test(named))
    .map((named) => named.replace(/[#:].*$/, '').replace(/[),.;]+$/, ''));
}

describe('documentation links', () => {
  it('computes anchors and finds links as GitHub does', () => {
    expect([...anchors("# A (`b`, `c:d`)\n## A (b, cd)\n```\n# not a heading\n```\n### Don't stop")]).toEqual(['a-b-cd', 'a-b-cd-1', 'dont-stop']);
    expect(links('see [x](a.md#b) and ![i](c.png), not `[y](z.md)`')).toEqual(['a.md#b', 'c.png']);
  });

  it.each(pages)('%s links only to files and headings of the repository', (page) => {
    expect(problems(page)).toEqual([]);
  });

  it('no tracked file cites the shared folder beside the repository it was cut from', () => {
    // Built from parts so that this file does not name it itself.
    const needle = ['..', 'shared'].join('/');
    const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter(Boolean);
    expect(tracked.length).toBeGreaterThan(100);
    const citing = tracked.filter((file) => existsSync(path.join(root, file)) && readFileSync(path.join(root, file), 'latin1').includes(needle));
    expect(citing).toEqual([]);
  });

  it.each(pages)('%s names only files and folders that exist', (page) => {
    const named = namedPaths(readFileSync(path.join(root, page), 'utf8'));
    expect(named.filter((file) => !existsSync(path.join(root, file)))).toEqual([]);
  });

  it("README.md's documentation table lists every page of docs/", () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    const listed = new Set([...readme.matchAll(/^\| \[docs\/([\w-]+\.md)\]/gm)].map((m) => m[1]));
    const docs = readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md'));
    expect(docs.filter((page) => !listed.has(page))).toEqual([]);
    expect(namedPaths('see `server/account/events/outbox.ts`, `server/<service>/x.ts` and `test/a.ts:12`')).toEqual([
      'server/account/events/outbox.ts',
      'test/a.ts',
    ]);
  });

  it('README.md stays short', () => {
    expect(readFileSync(path.join(root, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(200);
  });
});
