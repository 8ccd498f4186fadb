// Where the noise of bench:learning's paired comparison comes from. Replays the held-out games of versions kept
// by `bench:learning --keep` and of zero-shot (the games the benchmark played: same tasks, seeds and
// collaborator, so the same scores), splits the variance of the per-game difference in tests passed into the part
// between tasks and the part between games of one task, and says how many paired games an effect of a given
// size needs at the benchmark's games a task. More games a task only shrink the second part; more tasks both.
//
//   npx tsx bench/noise.ts --dir data/bench/learning [--versions rft-xxxx,sweet-yyyy] [--eval-episodes-per-task 2]
//                          [--eval-temperature 0.7]
//                          [--seed 1234] [--delta 2,4]
//
// Without --versions: every version trained from zero-shot (the table's methods, not the curve's rounds). It
// needs sampled games, two or more a task: a run kept with bench:learning's sampled protocol
// (--eval-temperature 0.7 --eval-episodes-per-task 2), or any run's versions replayed that way.
import { parseArgs } from 'node:util';
import type { PrismaClient } from '../prisma/generated/client.ts';
import { createScorer, type Scorer } from '../tasks/scorer.ts';
import { pairedMeanGames, varianceComponents, type VarianceSplit } from '../tasks/sample-size.ts';
import { initBackend } from '../trainer/model/backend.ts';
import { comparePaired, outcomes, type GameOutcome } from '../trainer/evaluate.ts';
import { simulate, type SimulateOptions } from '../trainer/simulate.ts';
import { DEFAULT_SAMPLING } from '../trainer/rollout.ts';
import { openKeptDatabase } from './critic-check.ts';
import { runWhenMain } from './standalone.ts';

/**
 * The held-out games of bench:learning: `perTask` games of every test-split task, seeded apart from collection,
 * played at `temperature` (0: greedy).
 */
export function heldOutGames(testTasks: number, perTask: number, seed: number, temperature: number): SimulateOptions {
  return {
    kind: 'backend',
    split: 'test',
    episodes: testTasks * perTask,
    seed: seed + 1,
    store: false,
    sampling: { ...DEFAULT_SAMPLING, temperature },
  };
}

export interface Noise {
  version: string;
  /** Mean per-game difference in tests passed (fraction), version minus zero-shot, and its Wilcoxon p over tasks. */
  difference: number;
  p: number;
  split: VarianceSplit;
  /** Paired games for 80 % power at alpha 0.05, by effect (fraction), at the same games a task. */
  gamesNeeded: { delta: number; games: number }[];
}

/** The variance split of a version's per-game differences from zero-shot on the same games. */
export function noiseOf(
  version: string,
  games: readonly GameOutcome[],
  zero: readonly GameOutcome[],
  deltas: readonly number[],
): Noise {
  const c = comparePaired({ version, games }, { version: 'zero-shot', games: zero }, { kind: 'backend' });
  const split = varianceComponents(
    games.map((g, i) => g.score - zero[i]!.score),
    games.map((g) => g.taskId),
  );
  // The variance of a mean over n games in tasks of k is (within + k * between) / n.
  const sd = Math.sqrt(split.within + split.perCluster * split.between);
  return {
    version,
    difference: c.score.difference.estimate,
    p: c.score.wilcoxon.pValue,
    split,
    gamesNeeded: deltas.map((delta) => ({ delta, games: pairedMeanGames({ delta, sd }) })),
  };
}

async function replay(prisma: PrismaClient, scorer: Scorer, name: string, o: SimulateOptions): Promise<GameOutcome[]> {
  const version = await prisma.policyVersion.findFirst({ where: { name } });
  if (!version) throw new Error(`no version named ${name} in this benchmark directory`);
  return outcomes(await simulate(prisma, version, scorer, o));
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      dir: { type: 'string', default: 'data/bench/learning' },
      versions: { type: 'string' },
      'eval-episodes-per-task': { type: 'string', default: '2' },
      'eval-temperature': { type: 'string', default: String(DEFAULT_SAMPLING.temperature) },
      seed: { type: 'string', default: '1234' },
      delta: { type: 'string', default: '2,4' },
    },
  });
  const perTask = Number(values['eval-episodes-per-task']);
  const seed = Number(values.seed);
  const deltas = values.delta!.split(',').map((d) => Number(d) / 100);
  if (!Number.isInteger(perTask) || perTask < 2)
    throw new Error('--eval-episodes-per-task must be an integer >= 2 (one game a task has no within-task variance)');
  const temperature = Number(values['eval-temperature']);
  if (!(temperature > 0 && temperature <= 2))
    throw new Error(
      '--eval-temperature must be in (0, 2]: greedy games of one task are one game, with no within-task variance',
    );
  if (!Number.isInteger(seed) || deltas.some((d) => !(d > 0 && d < 1)))
    throw new Error('--seed must be an integer and --delta points in (0, 100)');
  await initBackend();
  const db = await openKeptDatabase(values.dir!);
  const scorer = createScorer();
  try {
    const zero = await db.prisma.policyVersion.findFirst({ where: { name: 'zero-shot' } });
    if (!zero) throw new Error(`no zero-shot version in ${values.dir}`);
    const names = values.versions
      ? values.versions.split(',').filter(Boolean)
      : (await db.prisma.policyVersion.findMany({ where: { parentId: zero.id }, orderBy: { createdAt: 'asc' } })).map(
          (v) => v.name,
        );
    const o = heldOutGames(
      await db.prisma.task.count({ where: { kind: 'backend', split: 'test' } }),
      perTask,
      seed,
      temperature,
    );
    const zeroGames = await replay(db.prisma, scorer, 'zero-shot', o);
    const rows: Noise[] = [];
    for (const name of names) rows.push(noiseOf(name, await replay(db.prisma, scorer, name, o), zeroGames, deltas));
    const pts = (x: number) => (x * 100).toFixed(1);
    console.log(
      `${o.episodes} paired games (${perTask} a task); variance of the per-game difference in tests passed, in squared points:`,
    );
    console.log(
      `${'version'.padEnd(18)} ${'Δ points'.padEnd(9)} ${'p'.padEnd(7)} ${'within task'.padEnd(12)} ${'between tasks'.padEnd(14)} ${deltas.map((d) => `games for +${pts(d)}`.padEnd(16)).join(' ')}`,
    );
    for (const r of rows) {
      const sq = (x: number) => (x * 10_000).toFixed(0);
      console.log(
        `${r.version.padEnd(18)} ${pts(r.difference).padEnd(9)} ${r.p.toFixed(3).padEnd(7)} ${sq(r.split.within).padEnd(12)} ${sq(r.split.between).padEnd(14)} ${r.gamesNeeded.map((g) => String(g.games).padEnd(16)).join(' ')}`,
      );
    }
    console.log(JSON.stringify({ bench: 'noise', games: o.episodes, perTask, seed, rows }));
  } finally {
    await scorer.close();
    await db.close();
  }
}

runWhenMain(import.meta.url, main);
