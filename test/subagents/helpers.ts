/** Shared bits of the subagent suites: routing the scripted model between parent and subagent. */
import { lastUserText, toolResults, type ModelRequest, type ScriptedStep } from '../support/scripted-model.js';
import type { ChatRig } from '../chat/helpers.js';
import { until } from '../chat/helpers.js';

export function systemText(request: ModelRequest): string {
  const system = request.messages.find((m) => m.role === 'system');
  return typeof system?.content === 'string' ? system.content : JSON.stringify(system?.content ?? '');
}

export const isSubagent = (request: ModelRequest) => systemText(request).startsWith('You are a subagent');

export interface SpawnArgs {
  label: string;
  task: string;
  persona?: string;
  timeout_seconds?: number;
}

/**
 * A responder: a parent request without tool results asks for the spawns; with results it says
 * `started`. Subagent requests are answered by `subagent(task)`.
 */
export function spawnResponder(spawns: SpawnArgs[], subagent: (task: string, request: ModelRequest) => ScriptedStep) {
  return (request: ModelRequest): ScriptedStep => {
    if (isSubagent(request)) return subagent(lastUserText(request), request);
    if (toolResults(request).length === 0) return { toolCalls: spawns.map((args) => ({ name: 'spawn_subagent', args })) };
    return { text: 'started' };
  };
}

/** The parsed results of the parent's spawn_subagent calls (from the model's request log). */
export function spawnResults(rig: ChatRig): Array<{ run_id?: string; status?: string; message?: string; raw: string }> {
  const parent = [...rig.model.requests].reverse().find((r) => !isSubagent(r) && toolResults(r).length > 0);
  return toolResults(parent!).map((r) => {
    try {
      return { ...(JSON.parse(r.content) as object), raw: r.content };
    } catch {
      return { raw: r.content };
    }
  });
}

/** Makes the parent chat spawn, then returns the run ids the tool answered. */
export async function spawnVia(
  rig: ChatRig,
  chatId: string,
  spawns: SpawnArgs[],
  subagent: (task: string, request: ModelRequest) => ScriptedStep,
): Promise<string[]> {
  rig.model.respond(spawnResponder(spawns, subagent));
  const frames = await rig.chat(chatId, 'please delegate');
  if (frames.at(-1)?.data.type !== 'done') throw new Error('chat did not end');
  return spawnResults(rig)
    .map((r) => r.run_id)
    .filter((id): id is string => typeof id === 'string');
}

export async function waitForStatus(rig: ChatRig, runId: string, status: string, timeoutMs = 10_000): Promise<Record<string, unknown>> {
  let detail: Record<string, unknown> = {};
  await until(async () => {
    detail = (await rig.get<Record<string, unknown>>(`/subagents/${runId}`)).body;
    return detail.status === status;
  }, timeoutMs);
  return detail;
}

export async function post<T = unknown>(rig: ChatRig, path: string): Promise<{ status: number; body: T }> {
  const res = await fetch(`${rig.agent.url}${path}`, { method: 'POST', headers: rig.agent.auth });
  return { status: res.status, body: (await res.json()) as T };
}
