// Across seeds (README.md, "Protocol"): each method against the starter and SWEET-RL against each baseline, one
// difference a seed (the seed the unit: its own starter, collection and training), on sampled success and on sampled
// score (success alone does not see a policy that gets every value but asks on until the forced answer), and the
// seeds' JSON lines read back from earlier runs, so seeds run in separate processes are tested together.
import { readFileSync } from 'node:fs';
import type { MeanDifferenceTest } from '../../tasks/stats.ts';
import { acrossSeeds } from './evaluate.ts';
import type { Method } from './settings.ts';

export type Policy = Method | 'starter';
export type Measure = 'success' | 'score';
/** One seed's sampled success and score per policy. */
export type SeedResult = { seed: number } & Record<Measure, Partial<Record<Policy, number>>>;

const PAIRS: [string, Policy, Policy][] = [
  ['rft_vs_starter', 'rft', 'starter'],
  ['mtdpo_vs_starter', 'mtdpo', 'starter'],
  ['sweet_vs_starter', 'sweet', 'starter'],
  ['sweet_vs_mtdpo', 'sweet', 'mtdpo'],
  // Beside the issue's comparisons: the stronger baseline on design v7's held-out seeds (bench/HISTORY.md).
  ['sweet_vs_rft', 'sweet', 'rft'],
];

/** The comparisons the benchmark reports on one measure (the keys of its last JSON line) and the printed lines. */
export function acrossSeedsReport(
  perSeed: readonly SeedResult[],
  measure: Measure = 'success',
): { versus: Record<string, MeanDifferenceTest>; lines: string[] } {
  const col = (m: Policy) => perSeed.map((s) => s[measure][m] ?? NaN);
  const have = (m: Policy) => perSeed.every((s) => s[measure][m] !== undefined);
  const versus: Record<string, MeanDifferenceTest> = {};
  const lines = [`Across ${perSeed.length} seeds (sampled ${measure}, one difference a seed, Student t):`];
  for (const [key, a, b] of PAIRS) {
    if (!have(a) || !have(b)) continue;
    const [xs, ys] = [col(a), col(b)];
    const v = (versus[key] = acrossSeeds(xs, ys));
    const each = xs.map((x, i) => ((x - ys[i]!) * 100).toFixed(1));
    lines.push(
      `  ${key.padEnd(18)} ${(v.meanDiff * 100).toFixed(1)} points [${(v.low * 100).toFixed(1)}, ${(v.high * 100).toFixed(1)}], p = ${v.p.toPrecision(2)}; per seed ${each.join(', ')}`,
    );
  }
  if (lines.length === 1) lines.push('  no method was trained on every seed');
  return { versus, lines };
}

/** A seed's sampled success and score per policy, and its design, from its JSON line (bench/credit.ts prints one a seed). */
export function seedResultOf(line: string): { design: string; result: SeedResult } | null {
  if (!line.startsWith('{"bench":"credit"')) return null;
  const j = JSON.parse(line) as {
    seed?: number;
    design: string;
    policies?: Record<string, { sampledSuccess: number; sampledScore: number }>;
  };
  if (typeof j.seed !== 'number' || !j.policies) return null;
  const rows = Object.entries(j.policies);
  return {
    design: j.design,
    result: {
      seed: j.seed,
      success: Object.fromEntries(rows.map(([m, r]) => [m, r.sampledSuccess])),
      score: Object.fromEntries(rows.map(([m, r]) => [m, r.sampledScore])),
    },
  };
}

/**
 * Every seed's line in the given outputs of earlier runs, and the design they played; a seed found twice, or two
 * designs, is an error, not a silent choice.
 */
export function readSeedLines(files: readonly string[]): { design: string; seeds: SeedResult[] } {
  const bySeed = new Map<number, SeedResult>();
  const designs = new Set<string>();
  for (const f of files)
    for (const line of readFileSync(f, 'utf8').split('\n')) {
      const s = seedResultOf(line);
      if (!s) continue;
      if (bySeed.has(s.result.seed)) throw new Error(`--merge: seed ${s.result.seed} appears twice (${f})`);
      bySeed.set(s.result.seed, s.result);
      designs.add(s.design);
    }
  if (!bySeed.size) throw new Error(`--merge: no seed's JSON line in ${files.join(', ')}`);
  if (designs.size > 1) throw new Error(`--merge: the runs played designs ${[...designs].join(', ')}`);
  return { design: [...designs][0]!, seeds: [...bySeed.values()].sort((x, y) => x.seed - y.seed) };
}
