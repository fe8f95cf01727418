/**
 * Agent wire shapes (spec "Resources") for the areas the web client reads over the REST proxy:
 * the server's own zod-inferred types, imported as types only (nothing of the server is bundled).
 */
export type { ChatEvent, ChatSummary } from '../../../../server/agent/chat/schemas.js';
export type { TreeNode } from '../../../../server/agent/files/schemas.js';
export type { Contact as MessengerContact, ContactStatus, MessengerStatus } from '../../../../server/agent/messenger/schemas.js';
export type { PendingMessage } from '../../../../server/agent/pending/schemas.js';
export type { SubagentDetail, SubagentStatus, SubagentSummary } from '../../../../server/agent/subagents/schemas.js';
