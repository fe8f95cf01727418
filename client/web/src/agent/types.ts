/**
 * Agent wire shapes (spec "Resources") for the areas the web client reads over the REST proxy:
 * the server's own zod-inferred types, imported as types only (nothing of the server is bundled).
 */
export type { ChatEvent, ChatSummary } from '@contracts/agent/chat.js';
export type { TreeNode } from '@contracts/agent/files.js';
export type { Contact as MessengerContact, ContactStatus, MessengerStatus } from '@contracts/agent/messenger.js';
export type { PendingMessage } from '@contracts/agent/pending.js';
export type { SubagentDetail, SubagentStatus, SubagentSummary } from '@contracts/agent/subagents.js';
