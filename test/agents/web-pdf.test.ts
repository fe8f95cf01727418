/**
 * How `web_fetch` reads a PDF (server/agent/tools/web-pdf.ts: pdf.js in a thread of its own), on
 * PDFs written by hand (test/support/pdf.ts): what only a direct call can show, the time limit
 * above all, against a page crafted to keep pdf.js busy far longer. Through a real agent and its
 * egress gateway: test/agents/web-tools.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { readPage } from '../../server/agent/tools/web-page.js';
import { PDF_MAX_PAGES, PDF_OPTIONS } from '../../server/agent/tools/web-pdf.js';
import { makePdf } from '../support/pdf.js';

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

  it('ends a reading that outlasts the time limit, keeping the pages read before; a stopped run stops it', async () => {
    // 20 million operators in one content stream: pdf.js needs seconds of CPU for this page alone.
    const busy = deflateSync(Buffer.from(`BT /F1 12 Tf ${'(x) Tj '.repeat(20_000_000)}ET`), { level: 9 });
    const pdf = makePdf(['Read before the limit.', 'placeholder'], { streams: { 2: { data: busy, dictionary: '/Filter /FlateDecode' } } });
    const started = Date.now();
    const page = await read(pdf, { pdfReadMs: 1_500 });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(page.text).toBe('Read before the limit.');
    expect(page.notes).toEqual(['reading the PDF stopped at the time limit of 1.5 s after 1 of its 2 pages']);

    const run = new AbortController();
    const reading = read(pdf, { signal: run.signal });
    setTimeout(() => run.abort(new Error('the run was stopped')), 800);
    await expect(reading).rejects.toThrow('the run was stopped');
    expect(Date.now() - started).toBeLessThan(9_000);
  });

  it('reads one PDF at a time: two fetched together are read one after the other, each with its own time limit', async () => {
    const busy = deflateSync(Buffer.from(`BT /F1 12 Tf ${'(x) Tj '.repeat(20_000_000)}ET`), { level: 9 });
    const pdf = makePdf(['Read first.', 'placeholder'], { streams: { 2: { data: busy, dictionary: '/Filter /FlateDecode' } } });
    const ended: number[] = [];
    const both = await Promise.all(
      [1, 2].map((n) =>
        read(pdf, { pdfReadMs: 1_000 }).then((page) => {
          ended[n - 1] = Date.now();
          return page;
        }),
      ),
    );
    for (const page of both) expect(page.notes).toEqual(['reading the PDF stopped at the time limit of 1 s after 1 of its 2 pages']);
    // The second's limit ran from the end of the first: read together, they ended within milliseconds.
    expect(ended[1]! - ended[0]!).toBeGreaterThanOrEqual(1_000);
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
    // Were any of it run, it would call this server.
    let calls = 0;
    const witness = http.createServer((_req, res) => {
      calls++;
      res.end();
    });
    await new Promise<void>((resolve) => witness.listen(0, '127.0.0.1', resolve));
    const call = `fetch("http://127.0.0.1:${(witness.address() as AddressInfo).port}/ran")`;
    const bait = makePdf(['Only text'], {
      catalog: `/OpenAction << /S /JavaScript /JS (${call}) >> /Names << /JavaScript << /Names [(a) << /S /JavaScript /JS (${call}) >>] >> >>`,
      font: `/FontMatrix [1 0 0 1 0 (0\\); ${call}; //)]`,
    });
    try {
      expect((await read(bait)).text).toBe('Only text');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(calls).toBe(0);
    } finally {
      witness.close();
    }
    expect(PDF_OPTIONS).toMatchObject({ isEvalSupported: false, useSystemFonts: false, disableFontFace: true, useWorkerFetch: false });
    // No URL to fetch fonts, character maps or a worker from.
    expect(Object.keys(PDF_OPTIONS).filter((key) => /url|src|worker/i.test(key) && PDF_OPTIONS[key as keyof typeof PDF_OPTIONS] !== false)).toEqual([]);
  });
});
