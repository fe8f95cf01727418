/**
 * Schema-driven fuzzing of every REST endpoint of both services, read from their own OpenAPI
 * documents: for each operation, fast-check generates path parameters, query strings and bodies
 * from the documented schemas (valid-looking values), mutated ones (missing required fields,
 * wrong types, extra fields, hostile strings) and garbage (non-JSON, wrong content types,
 * arrays, huge strings), with and without credentials.
 *
 * Verdict over ≥ 10,000 requests: zero 5xx, zero stack traces or internal paths in any body,
 * and every non-2xx JSON answer exactly `{detail: string, code: string, issues?: [...]}`.
 * FUZZ_REQUESTS changes the total; FUZZ_SEED replays a run.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOAuthStack, type OAuthStack } from '../support/oauth-stack.js';
import { startTestAgent, type TestAgent } from '../support/servers.js';
import { testDeviceId } from '../support/devices.js';

const TOTAL = Number(process.env.FUZZ_REQUESTS ?? 10_400);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
const CONCURRENCY = 8;

type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
};
interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: Schema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema?: Schema }> };
  security?: unknown[];
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
}

const hostileString = fc.constantFrom(
  '',
  ' ',
  '../../../etc/passwd',
  '..\\..\\agent.db',
  '.env',
  'agent.db',
  '%2e%2e%2f%2e%2e%2fetc%2fpasswd',
  '\u0000',
  'a\u0000b',
  '\r\nSet-Cookie: x=y',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '{"$gt":""}',
  '__proto__',
  'constructor',
  '\u202e\u202d',
  '😀'.repeat(50),
  'x'.repeat(5000),
  '%',
  '%zz',
  '0x',
  'NaN',
  '-1',
  '1e309',
  'null',
  'Bearer ',
  'eyJhbGciOiJub25lIn0.e30.',
  'a@b.c',
  '000000',
  '0x0000000000000000000000000000000000000000',
);
const anyString = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 60 }) },
);
const garbageValue: fc.Arbitrary<unknown> = fc.oneof(
  anyString,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
);

function fromSchema(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return garbageValue;
  if (schema.const !== undefined) return fc.oneof(fc.constant(schema.const), garbageValue);
  if (schema.enum) return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...schema.enum) }, { weight: 1, arbitrary: garbageValue });
  const alternatives = schema.anyOf ?? schema.oneOf ?? schema.allOf;
  if (alternatives?.length) return fc.oneof(...alternatives.map((s) => fromSchema(s, depth + 1)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string': {
      const typical =
        schema.format === 'email'
          ? fc.emailAddress()
          : schema.pattern === '^\\d{6}$' || schema.minLength === 6
            ? fc.stringMatching(/^\d{6}$/)
            : fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 64, 256) });
      return fc.oneof({ weight: 4, arbitrary: typical }, { weight: 3, arbitrary: anyString }, { weight: 1, arbitrary: garbageValue });
    }
    case 'integer':
      return fc.oneof(
        fc.integer({ min: schema.minimum ?? -5, max: Math.min(schema.maximum ?? 2000, 2000) }),
        fc.integer(),
        fc.constantFrom(0, -1, 2 ** 53, Number.MAX_SAFE_INTEGER),
        garbageValue,
      );
    case 'number':
      return fc.oneof(fc.double({ noNaN: true }), garbageValue);
    case 'boolean':
      return fc.oneof(fc.boolean(), garbageValue);
    case 'array':
      return fc.oneof(fc.array(fromSchema(schema.items, depth + 1), { maxLength: 4 }), garbageValue);
    case 'object': {
      const props = Object.entries(schema.properties ?? {});
      const required = new Set(schema.required ?? []);
      const record: Record<string, fc.Arbitrary<unknown>> = Object.fromEntries(props.map(([k, s]) => [k, fromSchema(s, depth + 1)]));
      const shaped = fc.record(record, { requiredKeys: props.map(([k]) => k).filter((k) => required.has(k)) });
      const mutated = fc
        .tuple(
          fc.record(record, { requiredKeys: [] }),
          fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('__proto__', 'constructor', 'prototype')), garbageValue, { maxKeys: 3 }),
        )
        .map(([a, b]) => ({ ...b, ...a }));
      return fc.oneof({ weight: 4, arbitrary: shaped }, { weight: 2, arbitrary: mutated }, { weight: 1, arbitrary: garbageValue });
    }
    default:
      return garbageValue;
  }
}

const text = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? 'undefined'));

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

/** One operation's request arbitrary. `auth` gives the valid credential (or none). */
function requestsFor(pathTemplate: string, method: string, op: Operation, auth: () => string | undefined): fc.Arbitrary<FuzzRequest> {
  const params = op.parameters ?? [];
  const pathParams = params.filter((p) => p.in === 'path');
  const queryParams = params.filter((p) => p.in === 'query');
  const jsonSchema = op.requestBody?.content['application/json']?.schema;
  const multipart = op.requestBody?.content['multipart/form-data'] !== undefined;
  const pathArb = fc.record(
    Object.fromEntries(pathParams.map((p) => [p.name, fc.oneof(fromSchema(p.schema), anyString).map(text)])) as Record<string, fc.Arbitrary<string>>,
  );
  const queryArb = fc.record(Object.fromEntries(queryParams.map((p) => [p.name, fromSchema(p.schema)])) as Record<string, fc.Arbitrary<unknown>>, {
    requiredKeys: [],
  });
  const bodyArb: fc.Arbitrary<{ contentType?: string; body?: string | Buffer }> = fc.oneof(
    { weight: 6, arbitrary: fromSchema(jsonSchema ?? { type: 'object' }).map((v) => ({ contentType: 'application/json', body: JSON.stringify(v) ?? 'null' })) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('{', '{"a":', '[1,2', 'null', '"str"', '1', 'true', '{"device_id":"x"', '\u0000', '{"__proto__":{"admin":true}}')
        .map((body) => ({ contentType: 'application/json', body })),
    },
    {
      weight: 1,
      arbitrary: fc.string({ maxLength: 80 }).map((body) => ({
        contentType: fc.sample(
          fc.constantFrom(
            'text/plain',
            'application/x-www-form-urlencoded',
            'application/xml',
            'application/json; charset=utf-16',
            'multipart/form-data; boundary=x',
            'application/octet-stream',
          ),
          1,
        )[0],
        body,
      })),
    },
    { weight: 1, arbitrary: fc.constant({}) },
    ...(multipart
      ? [
          {
            weight: 3,
            arbitrary: fc.tuple(anyString, anyString, fc.uint8Array({ maxLength: 2048 }), fc.boolean()).map(([name, dir, bytes, truncated]) => {
              const b = 'fuzzboundary';
              const text = `--${b}\r\nContent-Disposition: form-data; name="path"\r\n\r\n${dir}\r\n--${b}\r\nContent-Disposition: form-data; name="file"; filename="${name.replace(/"/g, '')}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
              const full = Buffer.concat([Buffer.from(text), Buffer.from(bytes), Buffer.from(truncated ? '' : `\r\n--${b}--\r\n`)]);
              return { contentType: `multipart/form-data; boundary=${b}`, body: full };
            }),
          },
        ]
      : []),
  );
  const authArb = fc.oneof(
    { weight: 5, arbitrary: fc.constant('valid') },
    { weight: 1, arbitrary: fc.constant('none') },
    { weight: 1, arbitrary: anyString.map((s) => `Bearer ${s}`) },
  );
  return fc
    .record({
      path: pathArb,
      query: queryArb,
      body: bodyArb,
      auth: authArb,
      rawPathJunk: fc.oneof({ weight: 9, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('/', '//', '/..', '%00', '?a=%', '#x', ';x') }),
    })
    .map(({ path, query, body, auth: a, rawPathJunk }) => {
      let p = pathTemplate.replace(/\{(\w+)\}/g, (_m, name: string) =>
        encodeURIComponent(path[name] ?? 'x').replace(/%2F/gi, () => (Math.random() < 0.5 ? '/' : '%2F')),
      );
      const qs = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined) qs.set(k, text(v));
      if ([...qs].length) p += `?${qs.toString()}`;
      p += rawPathJunk;
      const headers: Record<string, string> = {};
      const valid = auth();
      if (a === 'valid' && valid) headers.authorization = valid;
      else if (a !== 'none' && a !== 'valid') headers.authorization = a.replace(/[^\x20-\x7e]/g, '');
      const sendsBody = method !== 'get' && method !== 'head' && body.body !== undefined;
      if (sendsBody && body.contentType) headers['content-type'] = body.contentType;
      return { method: method.toUpperCase(), path: p, headers, ...(sendsBody ? { body: body.body } : {}) };
    });
}

interface Finding {
  request: FuzzRequest;
  status: number;
  body: string;
  problem: string;
}

const STACK = /\n\s+at [\w.<>]+ \(|\bat .*\.(ts|js):\d+:\d+|node_modules\/|\/work\/|file:\/\/\//;

function check(req: FuzzRequest, status: number, contentType: string, body: string): string | undefined {
  if (status >= 500) return `status ${status}`;
  if (STACK.test(body)) return 'stack trace or internal path in body';
  if (status >= 400) {
    if (!/application\/json/.test(contentType)) return `error answer not JSON (${contentType})`;
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return 'error answer does not parse';
    }
    const o = parsed as Record<string, unknown>;
    if (typeof o !== 'object' || o === null || typeof o.detail !== 'string' || typeof o.code !== 'string') return 'error body not {detail, code}';
    const extra = Object.keys(o).filter((k) => !['detail', 'code', 'issues'].includes(k));
    if (extra.length) return `error body has extra keys ${extra.join(',')}`;
    if (
      o.issues !== undefined &&
      (!Array.isArray(o.issues) ||
        !o.issues.every((i) => typeof (i as { path?: unknown }).path === 'string' && typeof (i as { message?: unknown }).message === 'string'))
    )
      return 'malformed issues';
  }
  void req;
  return undefined;
}

async function fire(base: string, requests: FuzzRequest[], findings: Finding[], statuses: Map<number, number>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const req = requests[next++]!;
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 10_000);
      try {
        const res = await fetch(`${base}${req.path}`, {
          method: req.method,
          headers: req.headers,
          body: req.body as BodyInit | undefined,
          redirect: 'manual',
          signal: controller.signal,
        });
        // SSE answers are read for a moment only (a stream may run long).
        const isStream = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
        const body = isStream ? await readSome(res) : await res.text();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const problem = check(req, res.status, res.headers.get('content-type') ?? '', body);
        if (problem)
          findings.push({
            request: { ...req, body: typeof req.body === 'string' ? req.body.slice(0, 300) : req.body ? `<${req.body.length} bytes>` : undefined },
            status: res.status,
            body: body.slice(0, 500),
            problem,
          });
      } catch (error) {
        findings.push({ request: req, status: 0, body: String(error), problem: 'request failed (connection dropped or timed out)' });
      } finally {
        clearTimeout(timer);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

async function readSome(res: Response): Promise<string> {
  const reader = res.body!.getReader();
  let text = '';
  const until = Date.now() + 2_000;
  while (Date.now() < until && text.length < 20_000) {
    const { value, done } = await reader.read();
    if (done) break;
    text += Buffer.from(value).toString();
    if (text.includes('"type":"done"')) break;
  }
  await reader.cancel().catch(() => undefined);
  return text;
}

function plan(
  doc: Doc,
  count: number,
  auth: () => string | undefined,
  seed: number,
  skip: (path: string, method: string) => boolean = () => false,
): FuzzRequest[] {
  const ops = Object.entries(doc.paths).flatMap(([p, methods]) =>
    Object.entries(methods)
      .filter(([m]) => !skip(p, m))
      .map(([m, op]) => ({ p, m, op })),
  );
  const perOp = Math.ceil(count / ops.length);
  return ops.flatMap(({ p, m, op }, i) => fc.sample(requestsFor(p, m, op, auth), { numRuns: perOp, seed: seed + i }));
}

function report(name: string, sent: number, statuses: Map<number, number>, findings: Finding[]) {
  const byStatus = [...statuses]
    .sort(([a], [b]) => a - b)
    .map(([s, n]) => `${s}×${n}`)
    .join(' ');
  console.log(`${name}: ${sent} requests, seed ${SEED}; statuses ${byStatus}; findings ${findings.length}`);
  for (const f of findings.slice(0, 5)) console.log(JSON.stringify(f));
}

describe('fuzz from the OpenAPI documents', () => {
  let stack: OAuthStack;
  let agent: TestAgent;
  let accountDoc: Doc;
  let agentDoc: Doc;
  const accessTokens: string[] = [];

  beforeAll(async () => {
    [stack, agent] = await Promise.all([startOAuthStack('pglite', { RATE_LIMIT_MULTIPLIER: '100000' }), startTestAgent()]);
    accountDoc = (await (await fetch(`${stack.api}/openapi.json`)).json()) as Doc;
    agentDoc = (await (await fetch(`${agent.url}/openapi.json`, { headers: agent.auth })).json()) as Doc;
    for (let i = 0; i < 8; i++) {
      const res = await fetch(`${stack.api}/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: testDeviceId(`fuzz-${i}`) }),
      });
      accessTokens.push(((await res.json()) as { access_token: string }).access_token);
    }
  });
  afterAll(() => Promise.all([stack?.stop(), agent?.stop()]));

  it(`account API: ${Math.round(TOTAL * 0.55)} requests, no 5xx, no stack, documented error bodies`, async () => {
    // logout/all with a valid token would end the tokens the fuzz needs: it runs with the others last.
    let i = 0;
    const requests = plan(accountDoc, Math.round(TOTAL * 0.55), () => `Bearer ${accessTokens[i++ % (accessTokens.length - 1)]}`, SEED);
    const findings: Finding[] = [];
    const statuses = new Map<number, number>();
    await fire(stack.api, requests, findings, statuses);
    report('account', requests.length, statuses, findings);
    expect(requests.length).toBeGreaterThanOrEqual(Math.round(TOTAL * 0.55) - 20);
    expect(findings).toEqual([]);
  });

  it(`agent API: ${Math.round(TOTAL * 0.45)} requests, no 5xx, no stack, documented error bodies`, async () => {
    const requests = plan(agentDoc, Math.round(TOTAL * 0.45), () => `Bearer ${agent.secret}`, SEED + 1000);
    const findings: Finding[] = [];
    const statuses = new Map<number, number>();
    await fire(agent.url, requests, findings, statuses);
    report('agent', requests.length, statuses, findings);
    expect(findings).toEqual([]);
  });
});
