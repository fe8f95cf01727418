/** Small statistics for timing tests: Wilcoxon signed-rank on interleaved pairs (normal approximation, tie-corrected). */

export interface Comparison {
  n: number;
  medianA: number;
  medianB: number;
  /** Two-sided p-value that the differences a[i] − b[i] are symmetric about 0 (no difference). */
  p: number;
  /** Common-language effect size over the pairs: P(a > b) + P(a = b)/2; 0.5 means no difference. */
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

/**
 * Wilcoxon's signed-rank test on pairs (a[i], b[i]), taken next to each other: what the machine's
 * load does over the run (a second worker starting, a browser suite beside) falls on both halves
 * of a pair and cancels in their difference, where a two-sample test would count it as noise.
 * Pairs whose halves are equal carry no sign and are dropped (tie-corrected variance).
 */
export function signedRank(a: number[], b: number[]): Comparison {
  if (a.length !== b.length) throw new Error('signedRank compares pairs: a and b must be as long');
  const differences = a.map((v, i) => v - b[i]!).filter((d) => d !== 0);
  const byMagnitude = differences.map((d) => ({ d, m: Math.abs(d) })).sort((x, y) => x.m - y.m);
  let positiveRanks = 0;
  let tieTerm = 0;
  for (let i = 0; i < byMagnitude.length; ) {
    let j = i;
    while (j + 1 < byMagnitude.length && byMagnitude[j + 1]!.m === byMagnitude[i]!.m) j++;
    const rank = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) if (byMagnitude[k]!.d > 0) positiveRanks += rank;
    const t = j - i + 1;
    tieTerm += t ** 3 - t;
    i = j + 1;
  }
  const n = byMagnitude.length;
  const mean = (n * (n + 1)) / 4;
  const sd = Math.sqrt((n * (n + 1) * (2 * n + 1)) / 24 - tieTerm / 48);
  const z = sd === 0 ? 0 : (positiveRanks - mean) / sd;
  const above = a.filter((v, i) => v > b[i]!).length;
  const equal = a.length - differences.length;
  return { n: a.length, medianA: median(a), medianB: median(b), p: 2 * (1 - normalCdf(Math.abs(z))), effect: (above + equal / 2) / a.length };
}

/**
 * Takes `n` pairs of samples of two operations, one right after the other in a random order
 * (so drift in the machine's load falls on both halves alike, and which goes first cannot bias
 * the difference), after `warm` unrecorded rounds. Durations in ms; a[i] and b[i] are a pair.
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
