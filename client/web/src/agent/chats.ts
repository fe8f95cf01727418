/**
 * The list of chats lives on the agent (`agent.chats.list` / `rename`, `agent.chat.delete`), so it
 * follows the account to every browser. This tab only remembers which chat is open
 * (sessionStorage, so a reload comes back to it); sign-out forgets that too (session.ts).
 */
import { api } from '../api.js';
import type { ChatSummary } from './types.js';

export type { ChatSummary };

const CURRENT = 'agent.chat.current';

export async function listChats(): Promise<ChatSummary[]> {
  return (await api.agent.chats.list.query({})).chats;
}

export function renameChat(chatId: string, title: string): Promise<ChatSummary> {
  return api.agent.chats.rename.mutate({ chat_id: chatId, title });
}

export function newChatId(): string {
  return `web-${crypto.randomUUID()}`;
}

export function currentChat(): string | null {
  return sessionStorage.getItem(CURRENT);
}

export function setCurrentChat(id: string): void {
  sessionStorage.setItem(CURRENT, id);
}
