/**
 * Agent wire shapes (spec "Resources") for the areas the web client reads over the REST proxy.
 * Chat and file-tree types come from the server's schemas through tRPC inference.
 */
export interface PendingMessage {
  chat_id: string;
  content: string;
  source: string;
  created_at: string;
}

export type SubagentStatus = 'running' | 'completed' | 'failed' | 'timeout';

export interface SubagentSummary {
  id: string;
  label: string;
  task: string;
  status: SubagentStatus;
  chat_id: string;
  started_at: number;
  completed_at: number | null;
  result_preview: string | null;
  error: string | null;
  duration: number;
}

export interface SubagentDetail {
  id: string;
  label: string;
  task: string;
  persona: string;
  status: SubagentStatus;
  chat_id: string;
  started_at: number;
  completed_at: number | null;
  result: string;
  error: string | null;
  duration: number;
}

export interface MessengerStatus {
  connected: boolean;
  bot_username: string;
  bot_name: string;
}

export type ContactStatus = 'allowed' | 'pending' | 'blocked';

export interface MessengerContact {
  telegram_id: string;
  username: string;
  display_name: string;
  status: ContactStatus;
}

export interface TreeNode {
  name: string;
  path: string;
  type: 'dir' | 'file';
  children?: TreeNode[];
  size?: number;
}

export type ChatEvent =
  | { type: 'text'; content: string; name?: string; cut?: true }
  | { type: 'tool_use'; name: string; input: string }
  | { type: 'file'; path: string; caption?: string }
  | { type: 'error'; content: string }
  | { type: 'keepalive' }
  | { type: 'stream_meta'; user_message: string }
  | { type: 'done' };
