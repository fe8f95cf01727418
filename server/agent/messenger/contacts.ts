/**
 * Messenger contacts (table `contacts` in agent.db): who may talk to the agent through the bot.
 * Plain functions over the store; the router and the bot both call them.
 */
import { notFound } from '../../common/errors.js';
import type { AgentDb } from '../store.js';
import type { Contact, ContactStatus } from '@contracts/agent/messenger.js';

interface ContactRow {
  telegramId: string;
  username: string;
  displayName: string;
  status: string;
}

export function toContact(row: ContactRow): Contact {
  return { telegram_id: row.telegramId, username: row.username, display_name: row.displayName, status: row.status as ContactStatus };
}

const contactNotFound = (telegramId: string) => notFound(`No contact ${telegramId}`, 'CONTACT_NOT_FOUND');

/** Oldest first (the order people wrote in). */
export async function listContacts(db: AgentDb, status?: ContactStatus): Promise<Contact[]> {
  const rows = await db.contact.findMany({ where: status ? { status } : {}, orderBy: [{ createdAt: 'asc' }, { telegramId: 'asc' }] });
  return rows.map(toContact);
}

export async function setContactStatus(db: AgentDb, telegramId: string, status: ContactStatus): Promise<Contact> {
  const { count } = await db.contact.updateMany({ where: { telegramId }, data: { status } });
  if (count === 0) throw contactNotFound(telegramId);
  const row = await db.contact.findUnique({ where: { telegramId } });
  if (!row) throw contactNotFound(telegramId);
  return toContact(row);
}

export async function deleteContact(db: AgentDb, telegramId: string): Promise<{ status: 'ok'; telegram_id: string }> {
  const { count } = await db.contact.deleteMany({ where: { telegramId } });
  if (count === 0) throw contactNotFound(telegramId);
  return { status: 'ok', telegram_id: telegramId };
}

export async function findContact(db: AgentDb, telegramId: string): Promise<Contact | undefined> {
  const row = await db.contact.findUnique({ where: { telegramId } });
  return row ? toContact(row) : undefined;
}

export interface Sender {
  telegramId: string;
  username: string;
  displayName: string;
}

/** A sender as the bot sees them: their contact, and whether they are the bot's owner. */
export interface KnownSender {
  contact: Contact;
  /**
   * TELEGRAM_OWNER_ID, or paired with the account's one-time owner code: their messages run with
   * the owner's tools and prompt files; every other allowed contact talks to the agent as a guest
   * (docs/agent.md, Telegram).
   */
  owner: boolean;
}

/**
 * A private message arrived: the sender's contact, created `pending` when unknown (`allowed`
 * for the owner). Names follow what Telegram says now. The owner is always allowed, whatever
 * the stored status says.
 */
export async function recordSender(db: AgentDb, sender: Sender, ownerId?: string): Promise<KnownSender> {
  const isOwner = ownerId !== undefined && sender.telegramId === ownerId;
  const upsert = () =>
    db.contact.upsert({
      where: { telegramId: sender.telegramId },
      create: { telegramId: sender.telegramId, username: sender.username, displayName: sender.displayName, status: isOwner ? 'allowed' : 'pending' },
      update: { username: sender.username, displayName: sender.displayName },
    });
  // Two first messages at once: both may try the insert; the loser finds the row on its retry.
  const row = await upsert().catch((error: unknown) => {
    if ((error as { code?: unknown }).code === 'P2002') return upsert();
    throw error;
  });
  const contact = toContact(row);
  return isOwner ? { contact: { ...contact, status: 'allowed' }, owner: true } : { contact, owner: row.owner };
}

/** The sender paired with the owner code: allowed, and the owner from now on. */
export async function pairOwner(db: AgentDb, telegramId: string): Promise<void> {
  await db.contact.updateMany({ where: { telegramId }, data: { status: 'allowed', owner: true } });
}

/** The Telegram chats of the owner (`telegram:<id>`): the only ones that are the owner's conversations. */
export async function ownerTelegramIds(db: AgentDb, ownerId?: string): Promise<string[]> {
  const paired = await db.contact.findMany({ where: { owner: true }, select: { telegramId: true } });
  return [...new Set([...(ownerId ? [ownerId] : []), ...paired.map((row) => row.telegramId)])];
}

/** True exactly once per contact (a conditional update): whoever wins sends the notice. */
export async function claimNotice(db: AgentDb, telegramId: string): Promise<boolean> {
  const { count } = await db.contact.updateMany({ where: { telegramId, notifiedAt: null }, data: { notifiedAt: new Date() } });
  return count === 1;
}

/** The notice could not be sent: the next message tries again. */
export async function releaseNotice(db: AgentDb, telegramId: string): Promise<void> {
  await db.contact.updateMany({ where: { telegramId }, data: { notifiedAt: null } });
}
