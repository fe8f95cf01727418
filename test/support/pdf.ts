/**
 * Small valid PDFs written by hand, so the web tools' tests read files whose every byte is known:
 * a catalog, a page tree, one page per text with a content stream that shows it in Helvetica (a
 * standard font, not embedded) or given as bytes, an optional /Info title and optional extra catalog
 * entries (an /OpenAction, say), and a cross-reference table with the real offsets.
 */
import { randomBytes } from 'node:crypto';

export interface PdfOptions {
  title?: string;
  /** Entries added to the catalog dictionary as they are, e.g. `/OpenAction << … >>`. */
  catalog?: string;
  /** Entries added to the font dictionary as they are. */
  font?: string;
  /** A page's content stream (by page number, from 1) given as bytes with its dictionary's entries, instead of its text. */
  streams?: Record<number, { data: Buffer; dictionary: string }>;
  /** Encrypted by the standard handler with a user password (its check values are random, so no password opens it). */
  encrypted?: boolean;
}

/** A text for a PDF string literal: backslashes and parentheses escaped. */
const literal = (text: string) => text.replace(/[\\()]/g, (c) => `\\${c}`);

export function makePdf(pages: readonly string[], options: PdfOptions = {}): Buffer {
  const fontId = 3 + 2 * pages.length;
  const objects: Array<string | Buffer> = [
    `<< /Type /Catalog /Pages 2 0 R ${options.catalog ?? ''} >>`,
    `<< /Type /Pages /Kids [${pages.map((_, i) => `${3 + 2 * i} 0 R`).join(' ')}] /Count ${pages.length} >>`,
    ...pages.flatMap((text, i) => {
      const given = options.streams?.[i + 1];
      const content = given?.data ?? Buffer.from(`BT /F1 18 Tf 72 720 Td (${literal(text)}) Tj ET`, 'latin1');
      return [
        `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${4 + 2 * i} 0 R /Resources << /Font << /F1 ${fontId} 0 R >> >> >>`,
        Buffer.concat([Buffer.from(`<< /Length ${content.length} ${given?.dictionary ?? ''} >>\nstream\n`, 'latin1'), content, Buffer.from('\nendstream')]),
      ];
    }),
    `<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica ${options.font ?? ''} >>`,
    ...(options.title === undefined ? [] : [`<< /Title (${literal(options.title)}) >>`]),
  ];
  const hex = (bytes: number) => randomBytes(bytes).toString('hex');
  if (options.encrypted) objects.push(`<< /Filter /Standard /V 1 /R 2 /O <${hex(32)}> /U <${hex(32)}> /P -4 >>`);
  const chunks: Buffer[] = [Buffer.from('%PDF-1.4\n')];
  let length = chunks[0]?.length ?? 0;
  const add = (chunk: string | Buffer) => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk;
    chunks.push(bytes);
    length += bytes.length;
  };
  const offsets = objects.map((object, i) => {
    const offset = length;
    add(`${i + 1} 0 obj\n`);
    add(object);
    add('\nendobj\n');
    return offset;
  });
  const xref = length;
  add(`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`);
  const info = options.title === undefined ? '' : ` /Info ${objects.length - (options.encrypted ? 1 : 0)} 0 R`;
  const encrypt = options.encrypted ? ` /Encrypt ${objects.length} 0 R /ID [<${hex(16)}> <${hex(16)}>]` : '';
  add(`trailer\n<< /Size ${objects.length + 1} /Root 1 0 R${info}${encrypt} >>\nstartxref\n${xref}\n%%EOF\n`);
  return Buffer.concat(chunks);
}
