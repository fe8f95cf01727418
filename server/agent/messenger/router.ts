/**
 * Messenger procedures (spec: `/messenger/...`; docs/api.md: served under the integration's name
 * `/telegram/...` and the generic `/messenger/...` alias). One definition, built once per
 * name: the agent router mounts `messenger` and `telegram`, so both exist over REST (each at its
 * row of the route table) and over tRPC (`messenger.status`, `telegram.status`, …).
 */
import { z } from 'zod';
import { agentRoute, router } from '../trpc.js';
import { deleteContact, listContacts, setContactStatus } from './contacts.js';
import { setOwnerCode } from './owner-code.js';
import { Contact, ContactDeleted, ContactsList, MessengerStatus } from '@contracts/agent/messenger.js';

export function messengerRouterAt(name: 'messenger' | 'telegram') {
  return router({
    status: agentRoute(`${name}.status`, { summary: 'Whether the bot is connected, and as whom' })
      .output(MessengerStatus)
      .query(({ ctx }) => ctx.services.messenger.status()),

    contacts: agentRoute(`${name}.contacts`, { summary: 'Contacts, optionally of one status' })
      .output(ContactsList)
      .query(async ({ ctx, input }) => ({ contacts: await listContacts(ctx.services.store.db, input.status) })),

    updateContact: agentRoute(`${name}.updateContact`, { summary: "Set a contact's status; answers the updated contact", errors: ['CONTACT_NOT_FOUND'] })
      .output(Contact)
      .mutation(({ ctx, input }) => setContactStatus(ctx.services.store.db, input.telegram_id, input.status)),

    deleteContact: agentRoute(`${name}.deleteContact`, { summary: 'Remove a contact', errors: ['CONTACT_NOT_FOUND'] })
      .output(ContactDeleted)
      .mutation(({ ctx, input }) => deleteContact(ctx.services.store.db, input.telegram_id)),

    // For the account service (POST /messenger/bot/owner-code there): tRPC only, no REST path.
    setOwnerCode: agentRoute(`${name}.setOwnerCode`)
      .output(z.void())
      .mutation(({ ctx, input }) => setOwnerCode(ctx.services.store.db, input.code_sha256, new Date(input.expires_at))),
  });
}

export const messengerRouter = messengerRouterAt('messenger');
export const telegramRouter = messengerRouterAt('telegram');
