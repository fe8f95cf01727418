/**
 * Which addresses this browser asked a sign-in mail for, in the last 10 minutes (a mail's
 * lifetime). The verify page (pages/verify.ts) signs in without a question only when nobody is
 * signed in and this browser asked for the address: a link that arrives any other way — someone
 * else's, sent to make this browser use their account (login CSRF) — asks first.
 */
const KEY = 'agent.email.asked';
const LIFETIME_MS = 10 * 60 * 1000;

function load(): Record<string, number> {
  try {
    const stored = JSON.parse(localStorage.getItem(KEY) ?? '{}') as unknown;
    return typeof stored === 'object' && stored !== null ? (stored as Record<string, number>) : {};
  } catch {
    return {};
  }
}

const normalized = (address: string) => address.trim().toLowerCase();

export function rememberAsked(address: string): void {
  const now = Date.now();
  const live = Object.fromEntries(Object.entries(load()).filter(([, until]) => until > now));
  localStorage.setItem(KEY, JSON.stringify({ ...live, [normalized(address)]: now + LIFETIME_MS }));
}

export function askedHere(address: string): boolean {
  return (load()[normalized(address)] ?? 0) > Date.now();
}
