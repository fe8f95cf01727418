/**
 * V8 settings for the agent process, imported by main.ts before anything else so that they hold
 * while the module graph loads. An idle agent is mostly what start-up left behind, and a host
 * runs one per active user, so both trade a little CPU that nobody measures for memory (figures:
 * bench/agents.ts and the README's Performance section):
 * - the young generation stays at its initial size instead of growing to 16 MB semi-spaces while
 *   modules load (V8 gives that back only after the process has idled for 10–40 s): ~12 MB;
 * - Wasm (Prisma's query compiler) is compiled by Liftoff only: TurboFan's tier-up leaves ~12 MB
 *   of compiler memory for no measurable gain on the agent's few ORM queries (the chat history's
 *   hot path is plain SQL).
 */
import v8 from 'node:v8';

v8.setFlagsFromString('--semi-space-growth-factor=1');
v8.setFlagsFromString('--liftoff-only');
