// A Bradley-Terry fit of players (policy versions) from pairwise judgements (people's /task compare choices), with
// percentile bootstrap intervals, as Chatbot Arena ranks models. Pure: the dashboard (bot/dashboard/) reads the
// judgements and shows the fit. Strengths are on the log scale, centred to mean 0, and shown as Elo-like ratings
// (400/ln 10 per unit, 1000 at the mean) the way the Arena's leaderboard writes them.
import { quantileSorted, type Interval } from './stats.ts';
import { createRng } from './random.ts';

export interface Judgement {
  a: string;
  b: string;
  /** 1: a won, 0: b won, 0.5: a tie. */
  outcome: 1 | 0 | 0.5;
}

export interface BradleyTerryRow {
  player: string;
  /** Elo-like rating with its interval (estimate from all judgements, bounds from the bootstrap). */
  rating: Interval;
  judgements: number;
}

const ELO = 400 / Math.LN10;
/** The most MM iterations of one fit (it stops sooner once the centred strengths settle). */
const ITERATIONS = 10_000;

/** Maximum-likelihood log strengths (centred to mean 0) of `players` from `judgements`, ties as half a win. */
export function fitBradleyTerry(
  players: readonly string[],
  judgements: readonly Judgement[],
  iterations = ITERATIONS,
): Map<string, number> {
  const indexed = indexJudgements(players, judgements);
  return strengthsOf(
    players,
    fitCounts(
      players.length,
      tally(
        players.length,
        indexed,
        indexed.a.map((_, i) => i),
      ),
      iterations,
    ),
  );
}

interface IndexedJudgements {
  a: number[];
  b: number[];
  outcome: number[];
}

function indexJudgements(players: readonly string[], judgements: readonly Judgement[]): IndexedJudgements {
  const index = new Map(players.map((p, i) => [p, i]));
  const out: IndexedJudgements = { a: [], b: [], outcome: [] };
  for (const j of judgements) {
    const a = index.get(j.a),
      b = index.get(j.b);
    if (a === undefined || b === undefined) throw new RangeError(`judgement between unknown players ${j.a} and ${j.b}`);
    out.a.push(a);
    out.b.push(b);
    out.outcome.push(j.outcome);
  }
  return out;
}

/**
 * Wins (ties as half a win) and games by unordered pair of the judgements `picked` (indices, repeats allowed):
 * the likelihood depends on these counts only, so a fit costs the pairs played, not the judgements (20,000
 * judgements x 500 bootstrap fits took minutes on the dashboard when each iteration walked every judgement).
 */
function tally(
  n: number,
  j: IndexedJudgements,
  picked: ArrayLike<number>,
): { wins: Float64Array; games: Float64Array } {
  const wins = new Float64Array(n);
  const games = new Float64Array(n * n);
  for (let k = 0; k < picked.length; k++) {
    const i = picked[k]!;
    const a = j.a[i]!,
      b = j.b[i]!,
      o = j.outcome[i]!;
    if (a === b) continue; // a player against itself says nothing
    wins[a] = wins[a]! + o;
    wins[b] = wins[b]! + 1 - o;
    const key = Math.min(a, b) * n + Math.max(a, b);
    games[key] = games[key]! + 1;
  }
  return { wins, games };
}

/**
 * Maximum-likelihood strengths by Hunter's MM iteration. Every player also plays one virtual tie against a fixed
 * player of strength 1 (half a win, one game): without it a player who never lost (or never won) would run off to
 * infinity, and the fit would not exist for small samples.
 */
function fitCounts(
  n: number,
  t: { wins: Float64Array; games: Float64Array },
  iterations: number,
  start?: Float64Array,
): Float64Array {
  const pairs: [number, number, number][] = [];
  for (let a = 0; a < n; a++)
    for (let b = a + 1; b < n; b++) if (t.games[a * n + b]! > 0) pairs.push([a, b, t.games[a * n + b]!]);
  let p = start ? Float64Array.from(start) : new Float64Array(n).fill(1);
  let next = new Float64Array(n);
  const denom = new Float64Array(n);
  for (let it = 0; it < iterations; it++) {
    for (let i = 0; i < n; i++) denom[i] = 1 / (p[i]! + 1);
    for (const [a, b, count] of pairs) {
      const d = count / (p[a]! + p[b]!);
      denom[a] = denom[a]! + d;
      denom[b] = denom[b]! + d;
    }
    for (let i = 0; i < n; i++) next[i] = (t.wins[i]! + 0.5) / denom[i]!;
    rescale(next);
    // Converged when the centred log strengths (what is reported) stop moving.
    let shift = 0;
    for (let i = 0; i < n; i++) shift += (Math.log(next[i]!) - Math.log(p[i]!)) / n;
    let change = 0;
    for (let i = 0; i < n; i++) change = Math.max(change, Math.abs(Math.log(next[i]!) - Math.log(p[i]!) - shift));
    [p, next] = [next, p];
    if (change < 1e-10) break;
  }
  return p;
}

/**
 * Moves `p` to the best common scale: only the virtual ties depend on it, and their log-likelihood
 * sum_i [ log(c p_i) / 2 - log(c p_i + 1) ] is concave in u = log c with its maximum where
 * sum_i sigmoid(u + log p_i) = n / 2 (Newton's method on u). Alone, MM moves the scale by about one part in the
 * games a player played per iteration, and the differences, which the scale pulls a little, never met the
 * tolerance with 20,000 judgements (every bootstrap fit ran to the iteration cap: 17 s for the dashboard's table).
 */
function rescale(p: Float64Array): void {
  const n = p.length;
  let u = 0;
  for (let i = 0; i < n; i++) u -= Math.log(p[i]!) / n;
  for (let step = 0; step < 50; step++) {
    let f = -n / 2,
      df = 0;
    for (let i = 0; i < n; i++) {
      const s = 1 / (1 + Math.exp(-(u + Math.log(p[i]!))));
      f += s;
      df += s * (1 - s);
    }
    const du = f / df;
    u -= du;
    if (Math.abs(du) < 1e-14) break;
  }
  const c = Math.exp(u);
  for (let i = 0; i < n; i++) p[i] = p[i]! * c;
}

/** Log strengths centred to mean 0, by player. */
function strengthsOf(players: readonly string[], p: Float64Array): Map<string, number> {
  const logs = [...p].map(Math.log);
  const mean = logs.reduce((s, x) => s + x, 0) / (players.length || 1);
  return new Map(players.map((pl, i) => [pl, logs[i]! - mean]));
}

/** The fit as Elo-like ratings with percentile bootstrap intervals (judgements resampled with replacement; seeded). */
export function bradleyTerryTable(
  players: readonly string[],
  judgements: readonly Judgement[],
  o: { resamples?: number; level?: number; seed?: number } = {},
): BradleyTerryRow[] {
  const resamples = o.resamples ?? 500;
  const level = o.level ?? 0.95;
  const rng = createRng(o.seed ?? 1);
  const indexed = indexJudgements(players, judgements);
  // The full data's fit is the estimate, and where each resample's fit starts.
  const full = fitCounts(
    players.length,
    tally(
      players.length,
      indexed,
      indexed.a.map((_, i) => i),
    ),
    ITERATIONS,
  );
  const fit = strengthsOf(players, full);
  const draws = players.map(() => new Float64Array(resamples));
  const picked = new Uint32Array(judgements.length);
  for (let r = 0; r < resamples; r++) {
    for (let k = 0; k < picked.length; k++) picked[k] = Math.floor(rng() * judgements.length);
    const f = strengthsOf(players, fitCounts(players.length, tally(players.length, indexed, picked), ITERATIONS, full));
    players.forEach((pl, i) => (draws[i]![r] = f.get(pl)!));
  }
  const count = new Map<string, number>();
  for (const j of judgements) for (const pl of [j.a, j.b]) count.set(pl, (count.get(pl) ?? 0) + 1);
  return players
    .map((pl, i) => {
      const d = draws[i]!.sort();
      const elo = (x: number) => 1000 + ELO * x;
      const hasInterval = judgements.length > 1 && resamples > 1;
      return {
        player: pl,
        rating: {
          estimate: elo(fit.get(pl)!),
          lo: hasInterval ? elo(quantileSorted(d, (1 - level) / 2)) : NaN,
          hi: hasInterval ? elo(quantileSorted(d, 1 - (1 - level) / 2)) : NaN,
          n: count.get(pl) ?? 0,
        },
        judgements: count.get(pl) ?? 0,
      };
    })
    .sort((a, b) => b.rating.estimate - a.rating.estimate);
}
