/**
 * The user's connector tools (their own MCP servers, docs/connectors.md), offered to the model as
 * `<connector>__<tool>` with the server's JSON schemas. The agent holds no connector token: it asks
 * its egress gateway for the list at the start of each chat run and sends every call there
 * (contracts/agent/connectors.ts); the account service makes the call with the token and answers
 * the result. Text goes to the model (capped); an image, audio or binary resource is saved in the
 * workspace under `connectors/` and shown to the user as a file, and the model is told where.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import {
  ConnectorCallResult,
  ConnectorToolList,
  GATEWAY_CONNECTOR_CALL_PATH,
  GATEWAY_CONNECTOR_TOOLS_PATH,
  type ConnectorContent,
} from '@contracts/agent/connectors.js';
import { GATEWAY_SELF_HOST } from '@contracts/agent/model-source.js';
import type { Logger } from '../../common/log.js';
import { forbiddenPath, resolveWorkspacePath } from '../files/guard.js';
import type { WorkspaceQuota } from '../files/quota.js';
import { gatewayFetch, type EgressGatewayAddress } from '../net/egress.js';
import type { AgentToolSet, ToolContext } from './types.js';

/** Characters of a result's text the model gets. */
export const CONNECTOR_TEXT_MAX_CHARS = 30_000;
/** How long listing the tools may hold up a run's start. */
const LIST_TIMEOUT_MS = 5_000;
const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'audio/wav': 'wav',
  'audio/mpeg': 'mp3',
  'application/pdf': 'pdf',
  'application/gzip': 'gz',
};

const Arguments = z.record(z.string(), z.unknown());

export class ConnectorTools {
  private readonly fetch: typeof fetch;
  private files = 0;

  constructor(
    egress: EgressGatewayAddress,
    private readonly workspace: string,
    private readonly quota: WorkspaceQuota,
    private readonly log: Logger,
  ) {
    this.fetch = gatewayFetch(egress);
  }

  /** The tools as they are now; none when the gateway does not answer (the run goes on without them). */
  async tools(): Promise<AgentToolSet> {
    let list: ConnectorToolList;
    try {
      const res = await this.fetch(`http://${GATEWAY_SELF_HOST}${GATEWAY_CONNECTOR_TOOLS_PATH}`, { signal: AbortSignal.timeout(LIST_TIMEOUT_MS) });
      // An agent that belongs to no user (a static one) has no connectors: not a failure to log.
      if (res.status === 404) return {};
      list = ConnectorToolList.parse(await res.json());
    } catch (error) {
      this.log.warn({ reason: error instanceof Error ? error.message : String(error) }, 'listing connector tools failed; the run goes on without them');
      return {};
    }
    return Object.fromEntries(
      list.tools.map((tool) => [
        tool.name,
        {
          description: `${tool.description} (connector ${tool.connector})`.trim(),
          inputSchema: Arguments,
          jsonSchema: tool.input_schema,
          execute: (input: Record<string, unknown>, ctx: ToolContext) => this.call(tool.name, input, ctx),
        },
      ]),
    );
  }

  private async call(name: string, args: Record<string, unknown>, ctx: ToolContext): Promise<string> {
    const res = await this.fetch(`http://${GATEWAY_SELF_HOST}${GATEWAY_CONNECTOR_CALL_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name, arguments: args }),
      signal: ctx.signal,
    });
    if (!res.ok) throw new Error(`The connector call was refused (HTTP ${res.status}): ${(await res.text()).slice(0, 300)}`);
    const result = ConnectorCallResult.parse(await res.json());
    const parts: string[] = [];
    for (const item of result.content) parts.push(await this.part(name, item, ctx));
    if (result.structured && parts.length === 0) parts.push(JSON.stringify(result.structured));
    let text = parts.join('\n');
    if (text.length > CONNECTOR_TEXT_MAX_CHARS) text = `${text.slice(0, CONNECTOR_TEXT_MAX_CHARS)}\n…(cut at ${CONNECTOR_TEXT_MAX_CHARS} characters)`;
    if (result.is_error) throw new Error(text || `${name} failed`);
    return text;
  }

  /** One piece of a result as text for the model; binary pieces are saved and sent to the user. */
  private async part(name: string, item: ConnectorContent, ctx: ToolContext): Promise<string> {
    switch (item.type) {
      case 'text':
        return item.text;
      case 'resource_link':
        return `[resource ${item.uri}${item.name ? ` "${item.name}"` : ''}${item.description ? `: ${item.description}` : ''}]`;
      case 'resource':
        if (item.text !== undefined) return `[resource ${item.uri}]\n${item.text}`;
        if (item.blob !== undefined) return this.save(name, item.blob, item.mime_type ?? 'application/octet-stream', ctx, item.uri);
        return `[resource ${item.uri}, empty]`;
      default:
        return this.save(name, item.data, item.mime_type, ctx);
    }
  }

  private async save(name: string, base64: string, mimeType: string, ctx: ToolContext, uri?: string): Promise<string> {
    const bytes = Buffer.from(base64, 'base64');
    const relative = `connectors/${name}-${Date.now()}-${++this.files}.${EXTENSIONS[mimeType] ?? 'bin'}`;
    const reservation = await this.quota.reserve(bytes.length);
    try {
      // Through the workspace guard like every write: `connectors/` may be a link a command made.
      const target = await resolveWorkspacePath(this.workspace, relative, { forWrite: true });
      await mkdir(path.dirname(target.absolute), { recursive: true });
      const checked = await resolveWorkspacePath(this.workspace, relative, { forWrite: true });
      if (checked.absolute !== target.absolute) throw forbiddenPath('Path changed while writing');
      await writeFile(target.absolute, bytes);
    } finally {
      reservation.commit();
    }
    ctx.emit({ type: 'file', path: relative, caption: `from ${name}` });
    return `[${mimeType}${uri ? ` ${uri}` : ''}, ${bytes.length} bytes: saved as ${relative} and shown to the user]`;
  }
}
