/**
 * Deleting an account (docs/api.md, "Account self-service"): only from a session that signed in
 * within the last 10 minutes (403 REAUTH_REQUIRED otherwise), so a stolen long-lived session
 * cannot destroy the account.
 *
 * Order: 1. end every session and drop them from this instance's cache, so the account's tokens
 * stop at once and nothing can wake the agent again; 2. stop the agent and delete its workspace
 * (a shared, static agent is handed back instead: agents/provisioners/static.ts) and their own bot's
 * webhook (messenger/bots.ts); 3. in one transaction, the user row — identities, sessions,
 * passkeys, activity and the bot go with it (ON DELETE CASCADE) — and every row elsewhere that
 * names the person: pending e-mail codes of their addresses, wallet challenges of their
 * addresses, OAuth states and auth codes, passkey challenges, model-usage counters; and the
 * `user.deleted` webhook event (events/outbox.ts), which names nothing but the user id.
 */
import { getAddress } from 'viem';
import { forbidden } from '../../common/errors.js';
import { emitEvent } from '../events/outbox.js';
import type { AccountStore } from '../store.js';
import { giveUpAdminRole } from './roles.js';

export const REAUTH_WINDOW_MS = 10 * 60 * 1000;

/**
 * What removing a user reaches beyond the account's rows, each by the one thing it is asked to
 * do: this instance's session cache (tokens/sessions.ts), the user's agent (agents/provisioners/)
 * and their own bot (messenger/bots.ts). The services object has this shape.
 */
export interface UserRemoval {
  store: Pick<AccountStore, 'db'>;
  tokens: { sessions: { markRevoked(sessionIds: string[]): void } };
  agents: { provisioner: { deleteAgentOf(userId: string): Promise<void> } };
  bots: { forget(userId: string): Promise<void> } | undefined;
}

export async function deleteAccount(services: UserRemoval, userId: string, sessionId: string, now = new Date()): Promise<void> {
  const session = await services.store.db.session.findFirst({ where: { id: sessionId, userId }, select: { createdAt: true } });
  if (!session || now.getTime() - session.createdAt.getTime() > REAUTH_WINDOW_MS) {
    throw forbidden('Deleting the account needs a recent sign-in: sign in again, then delete within 10 minutes', 'REAUTH_REQUIRED');
  }
  await giveUpAdminRole(services.store.db, userId);
  await removeUser(services, userId, now);
}

/**
 * Removes a user and everything of theirs, in the order above; also what the guest retention
 * sweep does to abandoned guests (retention.ts). Removing a user who is already gone is a no-op.
 */
export async function removeUser(services: UserRemoval, userId: string, now = new Date()): Promise<void> {
  const { db } = services.store;
  const live = await db.session.findMany({ where: { userId }, select: { id: true } });
  await db.session.updateMany({ where: { userId, revokedAt: null }, data: { revokedAt: now } });
  services.tokens.sessions.markRevoked(live.map((s) => s.id));

  await services.agents.provisioner.deleteAgentOf(userId);
  // Their own bot's webhook would keep pointing at us; the row itself goes with the user.
  await services.bots?.forget(userId);

  await db.$transaction(async (tx) => {
    const user = await tx.user.findUnique({
      where: { id: userId },
      select: { email: true, identities: { select: { provider: true, subject: true, email: true } } },
    });
    if (!user) return;
    const addresses = new Set<string>();
    if (user.email) addresses.add(user.email);
    const wallets = new Set<string>();
    for (const identity of user.identities) {
      if (identity.email) addresses.add(identity.email.toLowerCase());
      if (identity.provider === 'email') addresses.add(identity.subject);
      if (identity.provider === 'wallet') {
        wallets.add(identity.subject.toLowerCase());
        wallets.add(checksummed(identity.subject));
      }
    }
    await tx.emailCode.deleteMany({ where: { email: { in: [...addresses] } } });
    await tx.walletNonce.deleteMany({ where: { address: { in: [...wallets] } } });
    await tx.authCode.deleteMany({ where: { userId } });
    await tx.oAuthState.deleteMany({ where: { guestUserId: userId } });
    await tx.webauthnChallenge.deleteMany({ where: { userId } });
    // Model-usage counters are kept per user id: the id itself is personal data.
    await tx.modelUsage.deleteMany({ where: { scope: userId } });
    await tx.user.delete({ where: { id: userId } });
    await emitEvent(tx, { type: 'user.deleted', data: { user_id: userId } }, now);
  });
}

function checksummed(address: string): string {
  try {
    return getAddress(address);
  } catch {
    return address;
  }
}
