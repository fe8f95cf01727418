/**
 * Workspace files served by `GET /files/{path}` (and through the account service's proxy, which
 * passes the headers on). The attack: a file the agent wrote (a prompt injection can make it
 * write anything) is opened from the service's origin and runs script there. Every type a
 * browser opens as an active document must come with a CSP sandbox, not only HTML and SVG.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../files/http.js';
import { startTestAgent, type TestAgent } from '../support/servers.js';

const XML_WITH_SCRIPT = `<?xml version="1.0"?>
<?xml-stylesheet type="text/xsl" href="#"?>
<root><script xmlns="http://www.w3.org/1999/xhtml">alert(document.domain)</script></root>`;

/** Extensions a browser renders as a document that can run script, and the type we serve each as. */
const ACTIVE = [
  ['page.html', 'text/html'],
  ['page.xhtml', 'application/xhtml+xml'],
  ['image.svg', 'image/svg+xml'],
  ['data.xml', 'application/xml'],
  ['style.xsl', 'application/xml'],
  ['feed.rss', 'application/rss+xml'],
  ['feed.atom', 'application/atom+xml'],
  ['graph.rdf', 'application/rdf+xml'],
  ['transform.xslt', 'application/xslt+xml'],
  ['formula.mathml', 'application/mathml+xml'],
  ['service.wsdl', 'application/wsdl+xml'],
  ['report.pdf', 'application/pdf'],
  ['archive.mhtml', 'message/rfc822'],
] as const;

describe('downloads that would run script in our origin are sandboxed', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await startTestAgent();
    for (const [name] of ACTIVE) await writeFile(path.join(agent.workspace, name), name.endsWith('.pdf') ? '%PDF-1.7\n/JavaScript' : XML_WITH_SCRIPT);
    await writeFile(path.join(agent.workspace, 'notes.txt'), 'plain');
  });
  afterAll(() => agent?.stop());

  it.each(ACTIVE)('%s carrying script (feed, RDF, XSLT, MathML, any +xml, PDF) is served with a CSP sandbox', async (name, type) => {
    for (const method of ['GET', 'HEAD']) {
      const res = await rawRequest(agent.url, `/files/${name}`, { method, headers: agent.auth });
      expect(res.status).toBe(200);
      expect(String(res.headers['content-type'])).toMatch(new RegExp(`^${type.replace(/[+.]/g, '\\$&')}\\b`));
      const csp = String(res.headers['content-security-policy'] ?? '');
      expect(csp).toMatch(/(?:^|;)\s*sandbox\s*(?:;|$)/);
      expect(csp).toContain("default-src 'none'");
    }
  });

  it('a ranged read of an active document is sandboxed too', async () => {
    const res = await rawRequest(agent.url, '/files/feed.rss', { headers: { ...agent.auth, range: 'bytes=0-10' } });
    expect(res.status).toBe(206);
    expect(res.headers['content-security-policy']).toContain('sandbox');
  });

  it('plain text needs no sandbox (nosniff keeps it text)', async () => {
    const res = await rawRequest(agent.url, '/files/notes.txt', { headers: agent.auth });
    expect(res.headers['content-security-policy']).toBeUndefined();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });
});
