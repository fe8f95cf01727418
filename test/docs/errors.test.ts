/**
 * The error catalogue (contracts/errors.ts) against what uses it: docs/errors.md is generated from
 * it, every code in it is answered somewhere, and the OpenAPI documents list each operation's codes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS } from '@contracts/errors.js';
import { renderErrorsPage } from '../../scripts/docs/errors.js';
import { startTestAgent, type TestAgent } from '../support/servers.js';

const root = path.resolve(import.meta.dirname, '../..');

const sources = (dir: string): string[] =>
  readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => readFileSync(path.join(entry.parentPath, entry.name), 'utf8'));

describe('error catalogue', () => {
  it('docs/errors.md is what the catalogue says', () => {
    expect(readFileSync(path.join(root, 'docs/errors.md'), 'utf8'), 'stale: run `npm run docs` and commit the result').toBe(renderErrorsPage());
  });

  it('every code is answered somewhere in the services (no code left behind by a rename)', () => {
    const code = [...sources('server'), ...sources('rest-bridge')].join('\n');
    const unused = Object.keys(ERRORS).filter((name) => !code.includes(`'${name}'`));
    expect(unused).toEqual([]);
  });

  describe('in the OpenAPI document', () => {
    let agent: TestAgent;
    let operations: Record<string, Record<string, { description?: string; 'x-error-codes'?: Array<{ code: string; status: number }> }>>;
    beforeAll(async () => {
      agent = await startTestAgent();
      operations = ((await (await fetch(`${agent.url}/openapi.json`, { headers: agent.auth })).json()) as { paths: typeof operations }).paths;
    });
    afterAll(() => agent.stop());

    const codesOf = (path: string, method: string) => operations[path]?.[method]?.['x-error-codes']?.map((entry) => `${entry.code} ${entry.status}`);

    it("lists a procedure's own codes with the service's and the JSON body's", () => {
      const codes = codesOf('/chats/{chat_id}', 'patch');
      expect(codes).toEqual(
        expect.arrayContaining(['CHAT_NOT_FOUND 404', 'INVALID_AGENT_SECRET 401', 'VALIDATION_FAILED 400', 'MALFORMED_JSON 400', 'INTERNAL 500']),
      );
      expect(operations['/chats/{chat_id}']!.patch!.description).toContain('`CHAT_NOT_FOUND` (404)');
    });

    it("lists a hand-made route's codes, and only what applies", () => {
      expect(codesOf('/files/upload', 'post')).toEqual(expect.arrayContaining(['QUOTA_EXCEEDED 507', 'UPLOAD_STALLED 408', 'INVALID_AGENT_SECRET 401']));
      const health = codesOf('/health', 'get');
      expect(health).toContain('INTERNAL 500');
      expect(health).not.toContain('INVALID_AGENT_SECRET 401');
      expect(health).not.toContain('MALFORMED_JSON 400');
    });
  });
});
