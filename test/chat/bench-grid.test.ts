/**
 * The chat benches' load shape (bench/lib/stream.ts `chunkGrid`, played by the scripted model's
 * `pauseBefore`): chat c of n writes its chunks on slots offset by c × interval / n, so the
 * servers under test all get the same even load. The bench figures rest on it.
 */
import { performance } from 'node:perf_hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { benchMessage, chunkGrid } from '../../bench/lib/stream.js';
import { startScriptedModel, type ModelRequest, type ScriptedModel } from '../support/scripted-model.js';

const requestFor = (text: string): ModelRequest => ({ model: 'scripted', messages: [{ role: 'user', content: text }] });

/** Where the pause `pauseBefore(index)` asks for, asked at clock time `now`, lands: its time and its phase in the interval. */
function land(pauseBefore: (index: number) => number, index: number, now: number, interval: number) {
  vi.spyOn(performance, 'now').mockReturnValue(now);
  const at = now + pauseBefore(index);
  return { at, phase: at % interval };
}

describe('chunkGrid', () => {
  const interval = 500;
  afterEach(() => vi.restoreAllMocks());

  it("puts each chat's chunks on its own phase of the interval, every interval, whenever it is asked", () => {
    const chats = 4;
    for (let chat = 0; chat < chats; chat++) {
      const pauseBefore = chunkGrid(requestFor(benchMessage(chat, chats)), interval);
      // Asked at an arbitrary moment (a run starts whenever the server gets to it).
      const now = 10_000 + chat * 137.3;
      const first = land(pauseBefore, 0, now, interval);
      expect(first.phase).toBeCloseTo(chat * (interval / chats), 6);
      // The first chunk waits at least half an interval (and less than one and a half).
      expect(first.at - now).toBeGreaterThanOrEqual(interval / 2 - 1e-6);
      expect(first.at - now).toBeLessThan(interval * 1.5);
      // Later chunks: one interval after the previous slot, even if the writer ran late.
      const second = land(pauseBefore, 1, first.at + 12, interval);
      expect(second.at).toBeCloseTo(first.at + interval, 6);
    }
  });

  it('spreads n chats evenly: their phases are n distinct slots, interval / n apart', () => {
    const chats = 10;
    const phases = Array.from({ length: chats }, (_, chat) => land(chunkGrid(requestFor(benchMessage(chat, chats)), interval), 0, 10_000, interval).phase).sort(
      (a, b) => a - b,
    );
    for (const [i, phase] of phases.entries()) expect(phase).toBeCloseTo(i * (interval / chats), 6);
  });

  it('schedules a request that is not a bench chat on the grid start (phase 0)', () => {
    expect(land(chunkGrid(requestFor('hello'), interval), 0, 10_123, interval).phase).toBeCloseTo(0, 6);
  });
});

describe("scripted model's pauseBefore", () => {
  let model: ScriptedModel;
  beforeAll(async () => {
    model = await startScriptedModel();
  });
  afterAll(() => model.close());

  it('asks once per text chunk, in order, and writes every chunk', async () => {
    const asked: number[] = [];
    model.respond(() => ({
      text: ['a', 'b', 'c'],
      pauseBefore: (index) => {
        asked.push(index);
        return 5;
      },
    }));
    const res = await fetch(`${model.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'scripted', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const body = await res.text();
    const contents = [...body.matchAll(/"content":"(\w)"/g)].map((m) => m[1]);
    expect(asked).toEqual([0, 1, 2]);
    expect(contents).toEqual(['a', 'b', 'c']);
  });
});
