/**
 * How much one user may hold through this instance at once, counted per instance in memory (what
 * is held lives on the instance that relays it):
 * - event streams (chat replies, reconnects, subscriptions): each holds a socket here and one on
 *   the agent, and the agent writes it a keepalive every 2 s; without a ceiling, one client
 *   opening streams in a loop costs the host sockets and wake-ups without end;
 * - other REST requests to the agent: each holds a connection to it while its body is piped
 *   through, so one client cannot pile up requests (stalled bodies, say) against its agent
 *   (docs/security.md, "Stalled bodies").
 */
import { AppError } from '../../../common/errors.js';

export class UserSlots {
  private readonly open = new Map<string, number>();

  constructor(
    private readonly perUser: number,
    private readonly refusal: (perUser: number) => AppError,
  ) {}

  /** Takes a slot for `userId` (the refusal at the ceiling); the returned function gives it back, once. */
  claim(userId: string): () => void {
    const held = this.open.get(userId) ?? 0;
    if (held >= this.perUser) throw this.refusal(this.perUser);
    this.open.set(userId, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(userId) ?? 1) - 1;
      if (left > 0) this.open.set(userId, left);
      else this.open.delete(userId);
    };
  }
}

export const streamSlots = (perUser: number) =>
  new UserSlots(
    perUser,
    (n) => new AppError(429, 'TOO_MANY_STREAMS', `At most ${n} streams may be open at once for one account; close one first`, { 'Retry-After': '5' }),
  );

export const requestSlots = (perUser: number) =>
  new UserSlots(
    perUser,
    (n) =>
      new AppError(429, 'TOO_MANY_AGENT_REQUESTS', `At most ${n} requests to your agent may be in flight at once; wait for one to finish`, {
        'Retry-After': '1',
      }),
  );
