/**
 * How `web_fetch` reads a PDF (server/agent/tools/web-page.ts), on PDFs written by hand
 * (test/support/pdf.ts): what only a direct call can show. pdf.js is wrapped so the test sees the
 * options it is opened with (eval off, no system fonts, no fetching); the reading itself is the
 * real pdf.js on the real bytes. Through a real agent and its egress gateway:
 * test/agents/web-tools.test.ts.
 */
import { describe, expect, it, vi } from 'vitest';
import { PDF_MAX_PAGES, readPage } from '../../server/agent/tools/web-page.js';
import { makePdf } from '../support/pdf.js';

const opened = vi.hoisted(() => [] as Array<Record<string, unknown>>);
vi.mock('unpdf', async (importOriginal) => {
  const unpdf = await importOriginal<typeof import('unpdf')>();
  return {
    ...unpdf,
    async getResolvedPDFJS() {
      const pdfjs = await unpdf.getResolvedPDFJS();
      return {
        ...pdfjs,
        getDocument(options: Record<string, unknown>) {
          opened.push(options);
          return pdfjs.getDocument(options);
        },
      };
    },
  };
});

const read = (bytes: Buffer, options: { type?: string; signal?: AbortSignal; pdfReadMs?: number } = {}) =>
  readPage(bytes, options.type ?? 'application/pdf', 'https://example.org/a.pdf', {
    signal: options.signal ?? new AbortController().signal,
    ...(options.pdfReadMs ? { pdfReadMs: options.pdfReadMs } : {}),
  });

const pages = (count: number) => Array.from({ length: count }, (_, i) => `Page number ${i + 1}.`);

describe('web_fetch reads a PDF', () => {
  it('its title from the metadata and each page’s text; a PDF sent as a download is known by its first bytes', async () => {
    const pdf = makePdf(['Quarterly tides (Brest)', 'Second page: spring tides'], { title: 'Tide report' });
    expect(await read(pdf)).toEqual({ title: 'Tide report', text: 'Quarterly tides (Brest)\n\nSecond page: spring tides', notes: [] });
    expect((await read(pdf, { type: 'application/octet-stream' })).text).toContain('spring tides');
    expect((await read(pdf, { type: '' })).text).toContain('spring tides');
  });

  it(`reads the first ${PDF_MAX_PAGES} pages and says how many there are`, async () => {
    const page = await read(makePdf(pages(PDF_MAX_PAGES + 7)));
    expect(page.text).toContain(`Page number ${PDF_MAX_PAGES}.`);
    expect(page.text).not.toContain(`Page number ${PDF_MAX_PAGES + 1}.`);
    expect(page.notes).toEqual([`the first ${PDF_MAX_PAGES} of the PDF's ${PDF_MAX_PAGES + 7} pages`]);
  });

  it('stops at the time limit with the pages read so far and a note; a stopped run stops the reading', async () => {
    const page = await read(makePdf(pages(40)), { pdfReadMs: 1 });
    expect(page.notes).toHaveLength(1);
    const [, done] = /^reading the PDF stopped at the time limit of 0\.001 s after (\d+) of its 40 pages$/.exec(page.notes?.[0] ?? '') ?? [];
    expect(Number(done)).toBeLessThan(40);
    expect(page.text).toBe(pages(Number(done)).join('\n\n'));

    const run = new AbortController();
    run.abort(new Error('the run was stopped'));
    await expect(read(makePdf(pages(3)), { signal: run.signal })).rejects.toThrow('the run was stopped');
  });

  it('an encrypted, a damaged and a cut PDF are named as such, and a PDF without text says so', async () => {
    expect((await read(makePdf(['Secret'], { encrypted: true }))).text).toMatch(/^\(PDF, \d+ bytes: encrypted with a password, so its text is not shown\)$/);
    expect((await read(Buffer.from('%PDF-1.7\n1 0 obj\n<< /Type /Catalog\n%%EOF\n'))).text).toMatch(
      /^\(PDF, \d+ bytes: damaged or not a PDF \(Invalid PDF structure\.\), so its text is not shown\)$/,
    );
    const whole = makePdf(['Cut short'], { title: 'Cut' });
    expect((await read(whole.subarray(0, 200))).text).toMatch(/^\(PDF, 200 bytes: damaged or not a PDF/);
    expect(await read(makePdf(['']))).toEqual({ title: '', text: '(PDF, 1 page without text, as a scan is: nothing to show)' });
  });

  it('runs nothing a PDF carries: its JavaScript and a font matrix that baits eval stay data; pdf.js is opened with eval off and nothing fetched', async () => {
    const bait = makePdf(['Only text'], {
      catalog:
        '/OpenAction << /S /JavaScript /JS (globalThis.pdfRan = "open action") >> /Names << /JavaScript << /Names [(a) << /S /JavaScript /JS (globalThis.pdfRan = "names") >>] >> >>',
      font: '/FontMatrix [1 0 0 1 0 (0\\); globalThis.pdfRan = "font matrix"; //)]',
    });
    opened.length = 0;
    expect((await read(bait)).text).toBe('Only text');
    expect((globalThis as { pdfRan?: unknown }).pdfRan).toBeUndefined();
    expect(opened).toHaveLength(1);
    expect(opened[0]).toMatchObject({ isEvalSupported: false, useSystemFonts: false, disableFontFace: true, useWorkerFetch: false });
    // No URL to fetch fonts, character maps or a worker from.
    expect(Object.keys(opened[0] ?? {}).filter((key) => /url|src|worker/i.test(key) && opened[0]?.[key] !== false)).toEqual([]);
  });
});
