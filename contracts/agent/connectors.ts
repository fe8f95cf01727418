/**
 * What an agent and its egress gateway say about the user's connectors (their own MCP servers,
 * docs/connectors.md). The agent never talks to a connector itself: it asks the gateway, on the
 * gateway's own host, for the tools it may offer the model and for each call; the account
 * service makes the call with the user's token, which therefore never enters the sandbox.
 */
import { z } from 'zod';

/** `GET` on `GATEWAY_SELF_HOST`: the user's enabled connector tools. */
export const GATEWAY_CONNECTOR_TOOLS_PATH = '/connectors/tools';
/** `POST` on `GATEWAY_SELF_HOST`: one tool call (`ConnectorCall` in, `ConnectorCallResult` out). */
export const GATEWAY_CONNECTOR_CALL_PATH = '/connectors/call';

/** `<connector name>__<tool name>`, as the model sees it. */
export const connectorToolName = (connector: string, tool: string): string => `${connector}__${tool}`;

export const ConnectorTool = z.object({
  /** The model's name for it (`connectorToolName`). */
  name: z.string(),
  connector: z.string(),
  tool: z.string(),
  description: z.string(),
  /** The server's JSON schema of the tool's arguments. */
  input_schema: z.record(z.string(), z.unknown()),
});
export type ConnectorTool = z.infer<typeof ConnectorTool>;

export const ConnectorToolList = z.object({ tools: z.array(ConnectorTool) });
export type ConnectorToolList = z.infer<typeof ConnectorToolList>;

export const ConnectorCall = z.object({ name: z.string().min(1).max(200), arguments: z.record(z.string(), z.unknown()) });
export type ConnectorCall = z.infer<typeof ConnectorCall>;

/** One piece of a tool result, as MCP gives it (text, image, audio, embedded resource, resource link). */
export const ConnectorContent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('image'), data: z.string(), mime_type: z.string() }),
  z.object({ type: z.literal('audio'), data: z.string(), mime_type: z.string() }),
  z.object({
    type: z.literal('resource'),
    uri: z.string(),
    mime_type: z.string().optional(),
    text: z.string().optional(),
    /** Base64. */
    blob: z.string().optional(),
  }),
  z.object({ type: z.literal('resource_link'), uri: z.string(), name: z.string().optional(), description: z.string().optional() }),
]);
export type ConnectorContent = z.infer<typeof ConnectorContent>;

export const ConnectorCallResult = z.object({
  content: z.array(ConnectorContent),
  /** The server's structured result, when it gave one. */
  structured: z.record(z.string(), z.unknown()).optional(),
  /** The tool (or the way to it) failed: the content says why. */
  is_error: z.boolean(),
});
export type ConnectorCallResult = z.infer<typeof ConnectorCallResult>;
