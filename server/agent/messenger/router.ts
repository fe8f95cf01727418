/**
 * Messenger procedures (spec: `/messenger/...`; docs/api.md: served under the integration's name
 * `/telegram/...` and the generic `/messenger/...` alias). One definition, built once per
 * prefix: the agent router mounts `messenger` and `telegram`, so both prefixes exist over REST
 * (from the `openapi` meta) and over tRPC (`messenger.status`, `telegram.status`, …).
 */
import { z } from 'zod';
import { agentProcedure, router } from '../trpc.js';
import { deleteContact, listContacts, setContactStatus } from './contacts.js';
import { setOwnerCode } from './owner-code.js';
import {
  Contact,
  ContactDeleted,
  ContactIdInput,
  ContactPatchInput,
  ContactsList,
  ContactsQuery,
  MessengerStatus,
  OwnerCodeInput,
} from '@contracts/agent/messenger.js';

export function messengerRouterAt(prefix: '/messenger' | '/telegram') {
  return router({
    status: agentProcedure
      .meta({ openapi: { method: 'GET', path: `${prefix}/status`, summary: 'Whether the bot is connected, and as whom' } })
      .input(z.void())
      .output(MessengerStatus)
      .query(({ ctx }) => ctx.services.messenger.status()),

    contacts: agentProcedure
      .meta({ openapi: { method: 'GET', path: `${prefix}/contacts`, summary: 'Contacts, optionally of one status' } })
      .input(ContactsQuery)
      .output(ContactsList)
      .query(async ({ ctx, input }) => ({ contacts: await listContacts(ctx.services.store.db, input.status) })),

    updateContact: agentProcedure
      .meta({
        openapi: { method: 'PATCH', path: `${prefix}/contacts/{telegram_id}`, summary: "Set a contact's status; answers the updated contact" },
        errors: ['CONTACT_NOT_FOUND'],
      })
      .input(ContactPatchInput)
      .output(Contact)
      .mutation(({ ctx, input }) => setContactStatus(ctx.services.store.db, input.telegram_id, input.status)),

    deleteContact: agentProcedure
      .meta({ openapi: { method: 'DELETE', path: `${prefix}/contacts/{telegram_id}`, summary: 'Remove a contact' }, errors: ['CONTACT_NOT_FOUND'] })
      .input(ContactIdInput)
      .output(ContactDeleted)
      .mutation(({ ctx, input }) => deleteContact(ctx.services.store.db, input.telegram_id)),

    // For the account service (POST /messenger/bot/owner-code there): tRPC only, no REST path.
    setOwnerCode: agentProcedure
      .input(OwnerCodeInput)
      .output(z.void())
      .mutation(({ ctx, input }) => setOwnerCode(ctx.services.store.db, input.code_sha256, new Date(input.expires_at))),
  });
}

export const messengerRouter = messengerRouterAt('/messenger');
export const telegramRouter = messengerRouterAt('/telegram');
