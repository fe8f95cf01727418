/** Wire shapes of the messenger API (spec: "Messenger status", "Messenger contact"). */
import { z } from 'zod';

export const CONTACT_STATUSES = ['allowed', 'pending', 'blocked'] as const;
export const ContactStatus = z.enum(CONTACT_STATUSES);
export type ContactStatus = z.infer<typeof ContactStatus>;

/** Telegram user ids are integers (up to 52 bits today); kept as a decimal string on the wire. */
export const TelegramId = z.string().regex(/^-?\d{1,20}$/, 'telegram_id must be a decimal integer');

export const MessengerStatus = z.object({
  connected: z.boolean(),
  bot_username: z.string(),
  bot_name: z.string(),
});
export type MessengerStatus = z.infer<typeof MessengerStatus>;

export const Contact = z.object({
  telegram_id: z.string(),
  username: z.string(),
  display_name: z.string(),
  status: ContactStatus,
});
export type Contact = z.infer<typeof Contact>;

export const ContactsQuery = z.object({ status: ContactStatus.optional() });
export const ContactsList = z.object({ contacts: z.array(Contact) });
export const ContactIdInput = z.object({ telegram_id: TelegramId });
export const ContactPatchInput = z.object({ telegram_id: TelegramId, status: ContactStatus });
export const ContactDeleted = z.object({ status: z.literal('ok'), telegram_id: z.string() });

/** The hash of a one-time owner pairing code and when it expires (account → agent). */
export const OwnerCodeInput = z.object({ code_sha256: z.string().regex(/^[0-9a-f]{64}$/), expires_at: z.iso.datetime() });
