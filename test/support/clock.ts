/**
 * Daily figures (model budgets, usage per day) turn over at midnight UTC. A test that fills
 * "today" and reads it back a few seconds later must not straddle that moment, and CI runs at any
 * hour: when midnight is less than `marginMs` away, this waits until just past it.
 */
export const MIDNIGHT_MARGIN_MS = 60_000;

export async function clearOfMidnightUtc(marginMs = MIDNIGHT_MARGIN_MS): Promise<void> {
  const untilMidnight = 86_400_000 - (Date.now() % 86_400_000);
  if (untilMidnight < marginMs) await new Promise((resolve) => setTimeout(resolve, untilMidnight + 100));
}
