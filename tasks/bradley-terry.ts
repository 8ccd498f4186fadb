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

/**
 * Maximum-likelihood strengths by Hunter's MM iteration, ties as half a win each. Every player also plays one
 * virtual tie against a fixed player of strength 1: without it a player who never lost (or never won) would run
 * off to infinity, and the fit would not exist for small samples.
 */
export function fitBradleyTerry(players: readonly string[], judgements: readonly Judgement[], iterations = 10_000): Map<string, number> {
  const index = new Map(players.map((p, i) => [p, i]));
  const n = players.length;
  const wins = new Float64Array(n).fill(0.5);
  const games: [number, number][] = [];
  for (const j of judgements) {
    const a = index.get(j.a), b = index.get(j.b);
    if (a === undefined || b === undefined) throw new RangeError(`judgement between unknown players ${j.a} and ${j.b}`);
    if (a === b) continue;
    wins[a] = wins[a]! + j.outcome;
    wins[b] = wins[b]! + 1 - j.outcome;
    games.push([a, b]);
  }
  let p = new Float64Array(n).fill(1);
  for (let it = 0; it < iterations; it++) {
    const denom = new Float64Array(n);
    for (let i = 0; i < n; i++) denom[i] = 1 / (p[i]! + 1);
    for (const [a, b] of games) {
      const d = 1 / (p[a]! + p[b]!);
      denom[a] = denom[a]! + d;
      denom[b] = denom[b]! + d;
    }
    const next = new Float64Array(n);
    let change = 0;
    for (let i = 0; i < n; i++) {
      next[i] = wins[i]! / denom[i]!;
      change = Math.max(change, Math.abs(Math.log(next[i]!) - Math.log(p[i]!)));
    }
    p = next;
    if (change < 1e-10) break;
  }
  const logs = [...p].map(Math.log);
  const mean = logs.reduce((s, x) => s + x, 0) / (n || 1);
  return new Map(players.map((pl, i) => [pl, logs[i]! - mean]));
}

/** The fit as Elo-like ratings with percentile bootstrap intervals (judgements resampled with replacement; seeded). */
export function bradleyTerryTable(players: readonly string[], judgements: readonly Judgement[], o: { resamples?: number; level?: number; seed?: number } = {}): BradleyTerryRow[] {
  const resamples = o.resamples ?? 500;
  const level = o.level ?? 0.95;
  const rng = createRng(o.seed ?? 1);
  const fit = fitBradleyTerry(players, judgements);
  const draws = players.map(() => new Float64Array(resamples));
  for (let r = 0; r < resamples; r++) {
    const sample = judgements.map(() => judgements[Math.floor(rng() * judgements.length)]!);
    const f = fitBradleyTerry(players, sample);
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
        rating: { estimate: elo(fit.get(pl)!), lo: hasInterval ? elo(quantileSorted(d, (1 - level) / 2)) : NaN, hi: hasInterval ? elo(quantileSorted(d, 1 - (1 - level) / 2)) : NaN, n: count.get(pl) ?? 0 },
        judgements: count.get(pl) ?? 0,
      };
    })
    .sort((a, b) => b.rating.estimate - a.rating.estimate);
}
