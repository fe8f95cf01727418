import { describe, expect, it } from 'vitest';
import { newRowId } from '../../server/account/ids.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('row ids (UUID version 7)', () => {
  it('carry their millisecond in the first 48 bits, then version 7, the RFC 9562 variant and random bits', () => {
    for (const at of [0, 1, 0xffff, 0x1_0000, Date.UTC(2026, 10, 29, 12, 0, 0, 123), 2 ** 48 - 1]) {
      const id = newRowId(at);
      expect(id).toMatch(V7);
      expect(Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
    }
  });

  it('sort by time as text and as PostgreSQL compares uuids (byte order), and never repeat', () => {
    const start = Date.UTC(2026, 10, 29);
    const ids = Array.from({ length: 2000 }, (_, i) => newRowId(start + i * 37));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(Array.from({ length: 10_000 }, () => newRowId(start))).size).toBe(10_000);
  });
});
