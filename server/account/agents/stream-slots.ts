/**
 * How many event streams (chat replies, reconnects, subscriptions) one user may have relayed by
 * this instance at once. Each open stream holds a socket here and one on the agent, and the agent
 * writes it a keepalive every 2 s: without a ceiling, one client opening streams in a loop costs
 * the host sockets and wake-ups without end. Counted per instance, in memory: a stream lives on the
 * instance that relays it.
 */
import { AppError } from '../../common/errors.js';

export class StreamSlots {
  private readonly open = new Map<string, number>();

  constructor(private readonly perUser: number) {}

  /** Takes a slot for `userId` (429 `TOO_MANY_STREAMS` at the ceiling); the returned function gives it back, once. */
  claim(userId: string): () => void {
    const held = this.open.get(userId) ?? 0;
    if (held >= this.perUser)
      throw new AppError(429, 'TOO_MANY_STREAMS', `At most ${this.perUser} streams may be open at once for one account; close one first`, {
        'Retry-After': '5',
      });
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
