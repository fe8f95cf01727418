/**
 * The web client's shape (issue 43): its icons are inline SVG (icons.ts), never an emoji or a
 * symbol character, which shows as an empty box where the system fonts lack it (the attach
 * button's paper clip did); and the chat page stays in parts a newcomer can read, each under 300
 * lines (the page, its list, connection, composer and menu, the transcript).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const src = path.join(root, 'client/web/src');

function sources(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.(ts|css|html)$/.test(entry.name))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/** Code without its comments: a comment may name an arrow (`a → b`); the page never shows it. */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');

/** Pictographs (emoji), arrows, geometric shapes, dingbats, the midline ellipsis: characters used as icons. */
const ICON_CHARACTER = /[\p{Extended_Pictographic}\u2190-\u21FF\u22EF\u2300-\u23FF\u25A0-\u25FF\u2600-\u27BF\u2B00-\u2BFF]/u;

describe('the web client', () => {
  it('draws every icon as inline SVG, none as a character', () => {
    const found = [...sources(src), path.join(root, 'client/web/index.html')].flatMap((file) =>
      code(readFileSync(file, 'utf8'))
        .split('\n')
        .flatMap((line, i) => (ICON_CHARACTER.test(line) ? [`${path.relative(root, file)}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(found).toEqual([]);
  });

  it('keeps the chat page in parts under 300 lines each', () => {
    const parts = ['pages/chat.ts', ...readdirSync(path.join(src, 'pages/chat')).map((name) => `pages/chat/${name}`), 'agent/transcript.ts'];
    expect(parts.length).toBeGreaterThanOrEqual(6);
    const long = parts.map((part) => [part, readFileSync(path.join(src, part), 'utf8').split('\n').length] as const).filter(([, lines]) => lines >= 300);
    expect(long).toEqual([]);
  });
});
