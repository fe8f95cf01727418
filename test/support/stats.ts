/** Small statistics for timing tests: Mann–Whitney U (normal approximation, tie-corrected). */

export interface Comparison {
  n: number;
  medianA: number;
  medianB: number;
  /** Two-sided p-value that A and B come from the same distribution. */
  p: number;
  /** Common-language effect size: P(a > b) + P(a = b)/2; 0.5 means no difference. */
  effect: number;
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Standard normal CDF (Abramowitz–Stegun 7.1.26 on erf). */
function normalCdf(z: number): number {
  const t = 1 / (1 + (0.3275911 * Math.abs(z)) / Math.SQRT2);
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-(z * z) / 2);
  return z >= 0 ? (1 + y) / 2 : (1 - y) / 2;
}

export function mannWhitney(a: number[], b: number[]): Comparison {
  const all = [...a.map((v) => ({ v, g: 0 })), ...b.map((v) => ({ v, g: 1 }))].sort((x, y) => x.v - y.v);
  const ranks = new Array<number>(all.length);
  let tieTerm = 0;
  for (let i = 0; i < all.length; ) {
    let j = i;
    while (j + 1 < all.length && all[j + 1]!.v === all[i]!.v) j++;
    const rank = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) ranks[k] = rank;
    const t = j - i + 1;
    tieTerm += t ** 3 - t;
    i = j + 1;
  }
  let rankSumA = 0;
  all.forEach((x, i) => {
    if (x.g === 0) rankSumA += ranks[i]!;
  });
  const n1 = a.length;
  const n2 = b.length;
  const u = rankSumA - (n1 * (n1 + 1)) / 2;
  const mean = (n1 * n2) / 2;
  const n = n1 + n2;
  const sd = Math.sqrt(((n1 * n2) / 12) * (n + 1 - tieTerm / (n * (n - 1))));
  const z = sd === 0 ? 0 : (u - mean) / sd;
  return { n: Math.min(n1, n2), medianA: median(a), medianB: median(b), p: 2 * (1 - normalCdf(Math.abs(z))), effect: u / (n1 * n2) };
}

/**
 * Takes `n` samples of each of two operations, interleaved in a random order (so drift in the
 * machine's load falls on both alike), after `warm` unrecorded rounds. Durations in ms.
 */
export async function sampleInterleaved(n: number, a: () => Promise<unknown>, b: () => Promise<unknown>, warm = 50): Promise<{ a: number[]; b: number[] }> {
  for (let i = 0; i < warm; i++) {
    await a();
    await b();
  }
  const out = { a: [] as number[], b: [] as number[] };
  for (let i = 0; i < n; i++) {
    const order = Math.random() < 0.5 ? (['a', 'b'] as const) : (['b', 'a'] as const);
    for (const which of order) {
      const started = performance.now();
      await (which === 'a' ? a() : b());
      out[which].push(performance.now() - started);
    }
  }
  return out;
}
