/**
 * Small valid PDFs written by hand, so the web tools' tests read files whose every byte is known:
 * a catalog, a page tree, one page per text with a content stream that shows it in Helvetica (a
 * standard font, not embedded), an optional /Info title and optional extra catalog entries (an
 * /OpenAction, say), and a cross-reference table with the real offsets.
 */
import { randomBytes } from 'node:crypto';

export interface PdfOptions {
  title?: string;
  /** Entries added to the catalog dictionary as they are, e.g. `/OpenAction << … >>`. */
  catalog?: string;
  /** Entries added to the font dictionary as they are. */
  font?: string;
  /** Encrypted by the standard handler with a user password (its check values are random, so no password opens it). */
  encrypted?: boolean;
}

/** A text for a PDF string literal: backslashes and parentheses escaped. */
const literal = (text: string) => text.replace(/[\\()]/g, (c) => `\\${c}`);

export function makePdf(pages: readonly string[], options: PdfOptions = {}): Buffer {
  const fontId = 3 + 2 * pages.length;
  const objects = [
    `<< /Type /Catalog /Pages 2 0 R ${options.catalog ?? ''} >>`,
    `<< /Type /Pages /Kids [${pages.map((_, i) => `${3 + 2 * i} 0 R`).join(' ')}] /Count ${pages.length} >>`,
    ...pages.flatMap((text, i) => {
      const content = `BT /F1 18 Tf 72 720 Td (${literal(text)}) Tj ET`;
      return [
        `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${4 + 2 * i} 0 R /Resources << /Font << /F1 ${fontId} 0 R >> >> >>`,
        `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
      ];
    }),
    `<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica ${options.font ?? ''} >>`,
    ...(options.title === undefined ? [] : [`<< /Title (${literal(options.title)}) >>`]),
  ];
  const hex = (bytes: number) => randomBytes(bytes).toString('hex');
  if (options.encrypted) objects.push(`<< /Filter /Standard /V 1 /R 2 /O <${hex(32)}> /U <${hex(32)}> /P -4 >>`);
  let body = '%PDF-1.4\n';
  const offsets = objects.map((object, i) => {
    const offset = body.length;
    body += `${i + 1} 0 obj\n${object}\nendobj\n`;
    return offset;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`;
  const info = options.title === undefined ? '' : ` /Info ${objects.length - (options.encrypted ? 1 : 0)} 0 R`;
  const encrypt = options.encrypted ? ` /Encrypt ${objects.length} 0 R /ID [<${hex(16)}> <${hex(16)}>]` : '';
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R${info}${encrypt} >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}
