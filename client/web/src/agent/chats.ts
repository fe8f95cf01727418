/** The list of chats, kept in this browser (the agent keeps each chat's history by id). */
export interface ChatEntry {
  id: string;
  title: string;
  updated: number;
}

const KEY = 'agent.chats';
const CURRENT = 'agent.chat.current';

export function listChats(): ChatEntry[] {
  try {
    const parsed = JSON.parse(localStorage.getItem(KEY) ?? '[]') as ChatEntry[];
    return Array.isArray(parsed) ? parsed.sort((a, b) => b.updated - a.updated) : [];
  } catch {
    return [];
  }
}

function store(chats: ChatEntry[]): void {
  localStorage.setItem(KEY, JSON.stringify(chats.slice(0, 200)));
}

export function newChatId(): string {
  return `web-${crypto.randomUUID()}`;
}

export function touchChat(id: string, title?: string): void {
  const chats = listChats();
  const found = chats.find((c) => c.id === id);
  if (found) {
    found.updated = Date.now();
    if (title && found.title === 'New chat') found.title = title;
  } else chats.push({ id, title: title ?? 'New chat', updated: Date.now() });
  store(chats);
}

export function removeChat(id: string): void {
  store(listChats().filter((c) => c.id !== id));
  if (currentChat() === id) localStorage.removeItem(CURRENT);
}

export function currentChat(): string | null {
  return localStorage.getItem(CURRENT);
}

export function setCurrentChat(id: string): void {
  localStorage.setItem(CURRENT, id);
}

export const titleFrom = (message: string) => (message.length > 40 ? `${message.slice(0, 40)}…` : message);
