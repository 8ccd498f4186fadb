// How many games a paired comparison needs (power of McNemar's test, games for a mean difference), and where a
// paired difference's variance comes from (task or game), to plan an experiment before it is played.
import { normalCdf, normalQuantile } from './distributions.ts';
import { clusterSums } from './stats.ts';

export interface PairedSuccessPlan {
  /** Games needed (rounded up). */
  games: number;
  /** The discordance assumed: P(exactly one of the two policies succeeds on a game). */
  discordance: number;
  delta: number;
  alpha: number;
  power: number;
}

/**
 * Games needed for McNemar's test to detect a difference `delta` in success rate (two-sided `alpha`, the given
 * `power`), by Connor's (1987) formula n = (z_{1-α/2} √ψ + z_{power} √(ψ - δ²))² / δ², ψ the discordance.
 * Without a known ψ it is taken from independent games at success rates `baseline` and `baseline + delta`
 * (ψ = p1(1 - p2) + p2(1 - p1)); paired policies agree more often than that, so this errs towards more games.
 */
export function pairedSuccessGames(o: {
  delta: number;
  alpha?: number;
  power?: number;
  baseline?: number;
  discordance?: number;
}): PairedSuccessPlan {
  const alpha = o.alpha ?? 0.05;
  const power = o.power ?? 0.8;
  const delta = Math.abs(o.delta);
  if (!(delta > 0 && delta < 1)) throw new RangeError(`pairedSuccessGames: delta must be in (0, 1), got ${o.delta}`);
  if (!(alpha > 0 && alpha < 1) || !(power > 0 && power < 1))
    throw new RangeError('pairedSuccessGames: alpha and power must be in (0, 1)');
  let psi = o.discordance;
  if (psi === undefined) {
    // Worst case over baselines when none is given: the rates straddle 1/2.
    const p1 = Math.min(Math.max(o.baseline ?? 0.5 - delta / 2, 0), 1 - delta);
    const p2 = p1 + delta;
    psi = p1 * (1 - p2) + p2 * (1 - p1);
  }
  if (!(psi >= delta * delta + 1e-12 && psi <= 1))
    throw new RangeError(`pairedSuccessGames: discordance ${psi} cannot produce a difference of ${delta}`);
  const za = normalQuantile(1 - alpha / 2);
  const zb = normalQuantile(power);
  const n = (za * Math.sqrt(psi) + zb * Math.sqrt(psi - delta * delta)) ** 2 / (delta * delta);
  return { games: Math.ceil(n - 1e-9), discordance: psi, delta, alpha, power };
}

/** Power of McNemar's test with `games` games (normal approximation, the inverse of pairedSuccessGames). */
export function pairedSuccessPower(o: { games: number; delta: number; discordance: number; alpha?: number }): number {
  const alpha = o.alpha ?? 0.05;
  const delta = Math.abs(o.delta);
  const za = normalQuantile(1 - alpha / 2);
  return normalCdf(
    (delta * Math.sqrt(o.games) - za * Math.sqrt(o.discordance)) / Math.sqrt(o.discordance - delta * delta),
  );
}

/** The two parts of the variance of values grouped in clusters of equal size (tasks of k games each). */
export interface VarianceSplit {
  clusters: number;
  perCluster: number;
  /** Between values of one cluster: the mean square within. */
  within: number;
  /** Between cluster means beyond what `within` explains: max(0, (MSB - MSW) / k), the random-effects estimate. */
  between: number;
}

/** One-way random-effects ANOVA (equal cluster sizes, at least 2 clusters of at least 2 values). */
export function varianceComponents(values: readonly number[], clusters: readonly string[]): VarianceSplit {
  const { sums, sizes } = clusterSums(values, clusters);
  const k = sizes[0] ?? 0;
  const m = sums.length;
  if (m < 2 || k < 2 || sizes.some((size) => size !== k))
    throw new RangeError('varianceComponents: needs at least 2 clusters of the same size, at least 2 values each');
  const grand = sums.reduce((a, b) => a + b, 0) / values.length;
  const msb = sums.reduce((a, sum) => a + k * (sum / k - grand) ** 2, 0) / (m - 1);
  // Within sum of squares as Σx² - Σ sum_j²/k; clipped at 0 against rounding when every cluster is constant.
  const msw =
    Math.max(0, values.reduce((a, x) => a + x * x, 0) - sums.reduce((a, sum) => a + (sum * sum) / k, 0)) /
    (m * (k - 1));
  return { clusters: m, perCluster: k, within: msw, between: Math.max(0, (msb - msw) / k) };
}

/**
 * Paired games needed to detect a mean difference `delta` (two-sided `alpha`, the given `power`; normal
 * approximation): n = ((z_{1-α/2} + z_power) sd / δ)². For games in tasks of k, sd² = within + k · between.
 */
export function pairedMeanGames(o: { delta: number; sd: number; alpha?: number; power?: number }): number {
  const alpha = o.alpha ?? 0.05;
  const power = o.power ?? 0.8;
  if (!(o.delta !== 0 && Number.isFinite(o.delta)) || !(o.sd >= 0))
    throw new RangeError(`pairedMeanGames: needs a non-zero delta and sd >= 0, got ${o.delta}, ${o.sd}`);
  if (!(alpha > 0 && alpha < 1) || !(power > 0 && power < 1))
    throw new RangeError('pairedMeanGames: alpha and power must be in (0, 1)');
  return Math.ceil((((normalQuantile(1 - alpha / 2) + normalQuantile(power)) * o.sd) / Math.abs(o.delta)) ** 2 - 1e-9);
}
