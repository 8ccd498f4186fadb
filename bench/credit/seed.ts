// One seed of the credit benchmark, in parts that the benchmark (../credit.ts) and the validation grid (tune.ts)
// both use: prepare (tasks, the starter, its check, one collection every method trains on), train a method
// through the project's own runs (trainer/runs.ts), play a policy (greedy and sampled, common random numbers),
// read it state by state, and gate the critic.
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PolicyVersion } from '../../prisma/generated/client.ts';
import { openDatabase, type Database } from '../../prisma/db.ts';
import { migrate } from '../../prisma/migrate.ts';
import { registerVersion } from '../../prisma/policy-store.ts';
import { deployPolicyByName } from '../../prisma/deployment-store.ts';
import { importTasks, taskContent } from '../../prisma/task-store.ts';
import {
  createCreditScorer,
  CREDIT_DESIGNS,
  designSince,
  generateCreditTasks,
  type CreditDesign,
} from '../../tasks/credit.ts';
import type { TaskRecord } from '../../tasks/model.ts';
import type { Scorer } from '../../tasks/scorer.ts';
import { Critic, type RankingReference } from '../../trainer/critic.ts';
import { checkpointSha256 } from '../../trainer/model/checkpoint.ts';
import { selectTrainingData } from '../../trainer/data.ts';
import type { Trajectory } from '../../trainer/pairs.ts';
import { createRun, executeRun, type Algorithm } from '../../trainer/runs.ts';
import { loadModel } from '../../trainer/sequences.ts';
import { simulate, type SimulatedGame } from '../../trainer/simulate.ts';
import {
  buildCreditStarter,
  checkCreditStarter,
  copyStarter,
  creditCollaborator,
  CREDIT_STARTER_SIZE,
  drillShape,
  type CreditDrillPhase,
  type StarterCheck,
} from '../credit-starter.ts';
import type { StarterReport, StarterSize } from '../../trainer/recipes/starter.ts';
import { phaseEffort, sampledSummary, type SampledSummary } from './evaluate.ts';
import { greedySummary, type GreedySummary, type PlayedGame } from '../../tasks/credit-states.ts';
import { RANKERS } from './rankers.ts';
import { methodConfig, type Method, type Overrides } from './settings.ts';
import { criticGate, stateProbabilities, type CriticGate, type StateReading } from './states.ts';

export interface SeedOptions {
  seed: number;
  design: CreditDesign;
  dir: string;
  trainTasks: number;
  episodesPerTask: number;
  /** Distinct evaluation tasks; each played once greedily and `gamesPerTask` times sampled. */
  evalTasks: number;
  gamesPerTask: number;
  /** Tasks whose canonical states are read (policies' move probabilities, the critic gate). */
  stateTasks: number;
  /** 'test': the held-out split; 'validation': train-split tasks the collection never played (the grid's). */
  evalSplit: 'test' | 'validation';
  starter: { games: number; steps: number; size?: StarterSize; from?: string; drill?: CreditDrillPhase | null };
  log: (line: string) => void;
}

export interface PreparedSeed {
  o: SeedOptions;
  db: Database;
  scorer: Scorer;
  starterDir: string;
  starter: StarterReport;
  starterCheck: StarterCheck;
  zero: PolicyVersion;
  evalTasks: TaskRecord[];
  stateTasks: TaskRecord[];
  collected: { sessions: number; successes: number; meanScore: number };
  close(): Promise<void>;
}

/**
 * The command-line flags of a seed's sizes, design and starter (parseArgs options), shared by the benchmark and the
 * validation grid; `overrides` changes a default (the grid plays fewer evaluation tasks).
 */
export function seedFlags(overrides: Partial<Record<'test-tasks', string>> = {}) {
  return {
    tasks: { type: 'string', default: '120' },
    'episodes-per-task': { type: 'string', default: '3' },
    // 20 since v7: the validation grid's size, and a seed's cost (bench/HISTORY.md, "v7's settings, frozen").
    'test-tasks': { type: 'string', default: overrides['test-tasks'] ?? '20' },
    'games-per-task': { type: 'string', default: '4' },
    'state-tasks': { type: 'string', default: '6' },
    'starter-games': { type: 'string', default: '1500' },
    // Updates on the demonstrator's games: 500 through v6, V7_STARTER_STEPS since v7 (README.md, "Design v7").
    'starter-steps': { type: 'string' },
    'starter-from': { type: 'string' },
    // A drill phase before the starter's games, SHAPE:STEPS:PEAK_LR:DRILLS[:ATTEMPTS] (credit-starter.ts
    // CreditDrillPhase), or none; the default is design v4's starter (README.md, "Design v4"), which v5 and v6
    // keep; since v7 a lower rate and a drill gate (V7_STARTER_DRILL). Designs v1-v3 ran with none.
    'starter-drill': { type: 'string' },
    design: { type: 'string', default: 'v7' },
  } as const;
}

/** A seed's options from the values of seedFlags, checked: whole numbers, a known design. */
export function seedOptionsFrom(
  v: Record<string, unknown>,
  o: Pick<SeedOptions, 'seed' | 'dir' | 'evalSplit' | 'log'>,
): SeedOptions {
  const int = (name: string) => {
    const n = Number(v[name]);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number, got ${String(v[name])}`);
    return n;
  };
  const design = v.design as CreditDesign;
  if (!CREDIT_DESIGNS.includes(design))
    throw new Error(`--design must be one of ${CREDIT_DESIGNS.join(', ')}, got ${String(v.design)}`);
  return {
    ...o,
    design,
    trainTasks: int('tasks'),
    episodesPerTask: int('episodes-per-task'),
    evalTasks: int('test-tasks'),
    gamesPerTask: int('games-per-task'),
    stateTasks: int('state-tasks'),
    starter: {
      games: int('starter-games'),
      steps:
        v['starter-steps'] === undefined ? (designSince(design, 'v7') ? V7_STARTER_STEPS : 500) : int('starter-steps'),
      drill: parseDrillPhase(
        String(v['starter-drill'] ?? (designSince(design, 'v7') ? V7_STARTER_DRILL : V4_STARTER_DRILL)),
      ),
      ...(v['starter-from'] ? { from: String(v['starter-from']) } : {}),
    },
  };
}

/** Design v4's starter: 1,000 updates on the optimum's games (keys in a random order) before the demonstrator's. */
export const V4_STARTER_DRILL = 'matching:1000:5e-3:1500';

/**
 * Design v7's starter's updates on the demonstrator's games: at v4-v6's 500 the v7 starter on validation seed 102 read
 * the state after two values at 41 % useful / 36 % repeated (the table: 60 / 15), at 1,500 at 52 / 19
 * (bench/HISTORY.md, "A drill phase that reads the state on every seed").
 */
export const V7_STARTER_STEPS = 1500;

/**
 * Design v7's starter: v4's drill phase at peak lr 2e-3 (at 5e-3 it stalled on one key in 5 of 7 phases on validation
 * seeds 101-104; at 2e-3 it read every key from two of those initialisations), run again from fresh weights (at most 4
 * phases) while it does not read which keys were told (credit-starter.ts creditDrillGate; README.md, "Design v7").
 */
export const V7_STARTER_DRILL = 'matching:1000:2e-3:1500:4';

/**
 * `--starter-drill`: none, or SHAPE:STEPS:PEAK_LR:DRILLS[:ATTEMPTS] (e.g. matching:1500:2e-3:1500); ATTEMPTS, the
 * most drill phases the drill gate may run (absent or 1: no gate).
 */
export function parseDrillPhase(flag: string): CreditDrillPhase | null {
  if (flag === 'none') return null;
  const [shape, steps, peakLr, drills, attempts, ...rest] = flag.split(':');
  const n = [Number(steps), Number(peakLr), Number(drills), Number(attempts ?? 1)];
  if (rest.length || n.some((x) => !(x > 0)) || ![n[0], n[2], n[3]].every(Number.isInteger))
    throw new Error(`--starter-drill must be none or SHAPE:STEPS:PEAK_LR:DRILLS[:ATTEMPTS], got ${flag}`);
  return {
    shape: drillShape(shape ?? ''),
    steps: n[0]!,
    peakLr: n[1]!,
    drills: n[2]!,
    ...(n[3]! > 1 ? { gateAttempts: n[3]! } : {}),
  };
}

/** Evaluation tasks: held-out ones, or (validation) train-split tasks from a stream the collection never drew from. */
function evaluationTasks(o: SeedOptions, train: readonly TaskRecord[]): TaskRecord[] {
  if (o.evalSplit === 'test')
    return generateCreditTasks({ seed: o.seed, count: o.evalTasks, split: 'test', design: o.design });
  const seen = new Set(train.map((t) => t.reference));
  const fresh = generateCreditTasks({
    seed: o.seed + 500_000,
    count: o.evalTasks * 4,
    split: 'train',
    design: o.design,
  }).filter((t) => !seen.has(t.reference));
  return fresh.slice(0, o.evalTasks).map((t) => ({ ...t, externalId: `${t.externalId}:validation`, split: 'test' }));
}

/** Distinct tasks only (the value triples repeat across draws): each task is then one unit of the intervals. */
const distinct = (tasks: readonly TaskRecord[]) => [...new Map(tasks.map((t) => [t.reference, t])).values()];

export async function prepareSeed(o: SeedOptions): Promise<PreparedSeed> {
  const pgliteDir = join(o.dir, `pglite-${Date.now()}`);
  const db = await openDatabase({ pgliteDir });
  const scorer = createCreditScorer({ design: o.design });
  await migrate(db);
  const train = generateCreditTasks({ seed: o.seed, count: o.trainTasks, split: 'train', design: o.design });
  const evalTasks = distinct(evaluationTasks(o, train));
  await importTasks(db.prisma, [...train, ...evalTasks]);
  const starterDir = join(o.dir, 'starter');
  const starter = o.starter.from
    ? await copyStarter(resolve(o.starter.from), starterDir, o.log)
    : await buildCreditStarter({
        dir: starterDir,
        seed: o.seed,
        games: o.starter.games,
        steps: o.starter.steps,
        size: o.starter.size ?? CREDIT_STARTER_SIZE,
        design: o.design,
        drillPhase: o.starter.drill ?? null,
        log: o.log,
      });
  const starterCheck = await checkCreditStarter(starterDir, evalTasks, o.seed + 13, o.design);
  await registerVersion(db.prisma, {
    name: 'zero-shot',
    algorithm: 'starter',
    checkpointPath: starterDir,
    checkpointSha256: await checkpointSha256(starterDir),
  });
  const zero = await deployPolicyByName(db, 'bench', 'zero-shot');
  const games = await simulate(db.prisma, zero, scorer, {
    kind: 'backend',
    split: 'train',
    episodes: train.length * o.episodesPerTask,
    seed: o.seed,
    store: true,
    collaborator: creditCollaborator(o.design),
    sampling: { temperature: 1, topP: 1, maxTokens: 48 },
  });
  const collected = {
    sessions: games.length,
    successes: games.filter((g) => g.evaluation.success).length,
    meanScore: games.reduce((s, g) => s + g.evaluation.score, 0) / games.length,
  };
  o.log(
    `collected ${collected.sessions} sessions: ${collected.successes} successes, mean score ${collected.meanScore.toFixed(3)}`,
  );
  return {
    o,
    db,
    scorer,
    starterDir,
    starter,
    starterCheck,
    zero,
    evalTasks,
    stateTasks: evalTasks.slice(0, o.stateTasks),
    collected,
    async close() {
      await scorer.close();
      await db.close();
      rmSync(pgliteDir, { recursive: true, force: true });
    },
  };
}

export interface TrainedMethod {
  method: Method;
  version: PolicyVersion;
  /** Updates and summed learning rate of each of its phases. */
  effort: Record<string, { updates: number; lrSum: number }>;
  /** sweet: where its critic was saved. */
  criticDir: string | null;
  /** The run's directory (its log, critic pairs, the actor's ranked candidates). */
  runDir: string;
}

const ALGORITHM: Record<Method, Algorithm> = {
  rft: 'rft',
  mtdpo: 'mtdpo',
  sweet: 'sweet',
  oracle: 'sweet',
  random: 'sweet',
};

/** The seed's collection as every method's run selects it (the data filter trainMethod gives its runs). */
export async function collectedTrajectories(p: PreparedSeed): Promise<Trajectory[]> {
  const { trajectories } = await selectTrainingData(p.db.prisma, COLLECTION_QUERY, collectionFilter(p));
  return trajectories;
}
const COLLECTION_QUERY = { ratingWeight: 0, kind: 'backend', split: 'train' } as const;
const collectionFilter = (p: PreparedSeed) => ({ source: 'both', simulatedWeight: 1, seed: p.o.seed }) as const;

/** Trains one method from the starter on the seed's collection, through the project's own runs. */
export async function trainMethod(
  p: PreparedSeed,
  method: Method,
  overrides: Overrides,
  extra: { policyUpdates?: number | null } = {},
): Promise<TrainedMethod> {
  const ranker =
    method === 'oracle' ? RANKERS.oracle(p.o.design) : method === 'random' ? RANKERS.random(p.o.seed) : undefined;
  const ctx = {
    prisma: p.db.prisma,
    checkpointRoot: join(p.o.dir, 'checkpoints'),
    progress: 'none' as const,
    log: p.o.log,
    ...(ranker ? { ranker } : {}),
  };
  const train = methodConfig(overrides, p.o.seed, extra.policyUpdates ? { policyUpdates: extra.policyUpdates } : {});
  const run = await createRun(ctx, {
    algorithm: ALGORITHM[method],
    preset: 'cpu-small',
    train,
    fromVersionId: p.zero.id,
    fromVersionName: p.zero.name,
    fromCheckpoint: p.starterDir,
    kind: COLLECTION_QUERY.kind,
    ratingWeight: COLLECTION_QUERY.ratingWeight,
    data: collectionFilter(p),
  });
  const version = await executeRun(ctx, run.id);
  const steps = await p.db.prisma.trainingStep.findMany({
    where: { runId: run.id },
    select: { phase: true, metrics: true },
  });
  return {
    method,
    version,
    effort: phaseEffort(steps),
    criticDir: method === 'sweet' ? join(run.checkpointDir!, 'critic') : null,
    runDir: run.checkpointDir!,
  };
}

export interface PlayedPolicy {
  greedy: GreedySummary;
  greedyGames: PlayedGame[];
  sampled: SampledSummary;
  states: StateReading;
}

const played = (refs: ReadonlyMap<string, string>, games: readonly SimulatedGame[]): PlayedGame[] =>
  games.map((g) => ({
    taskId: g.taskId,
    reference: refs.get(g.taskId)!,
    turns: g.turns,
    score: g.evaluation.score,
    success: g.evaluation.success,
  }));

/**
 * Plays a version on the evaluation tasks: one greedy game each, then `gamesPerTask` sampled games each at
 * temperature 1, with the same seeds for every policy (game i of any policy draws the same random numbers), and
 * reads it in the canonical states.
 */
export async function playPolicy(p: PreparedSeed, version: PolicyVersion): Promise<PlayedPolicy> {
  const rows = await p.db.prisma.task.findMany({ where: { split: 'test' }, orderBy: { contentHash: 'asc' } });
  const refs = new Map(rows.map((r) => [r.id, r.hiddenReference]));
  const tasks = rows.map((r) => ({ id: r.id, content: taskContent(r) }));
  const base = {
    kind: 'backend' as const,
    split: 'test' as const,
    store: false,
    tasks,
    collaborator: creditCollaborator(p.o.design),
  };
  const greedy = played(
    refs,
    await simulate(p.db.prisma, version, p.scorer, {
      ...base,
      episodes: tasks.length,
      seed: p.o.seed + 7,
      sampling: { temperature: 0, topP: 1, maxTokens: 48 },
    }),
  );
  const sampled = played(
    refs,
    await simulate(p.db.prisma, version, p.scorer, {
      ...base,
      episodes: tasks.length * p.o.gamesPerTask,
      seed: p.o.seed + 9,
      sampling: { temperature: 1, topP: 1, maxTokens: 48 },
    }),
  );
  const model = await loadModel(version.checkpointPath!, `states-${version.name}-${Date.now()}`, false);
  try {
    return {
      greedy: greedySummary(greedy, p.o.design),
      greedyGames: greedy,
      sampled: sampledSummary(sampled),
      states: await stateProbabilities(model, p.stateTasks, { design: p.o.design }),
    };
  } finally {
    model.model.dispose();
  }
}

/** The critic gate (states.ts) of a trained SWEET-RL critic, against the starter as the sampler, as its actor ranked. */
export async function gateCritic(
  p: PreparedSeed,
  criticDir: string,
  reference: RankingReference = 'sampler',
): Promise<CriticGate> {
  const critic = await Critic.load(p.starterDir, criticDir);
  const sampler = await loadModel(p.starterDir, `gate-sampler-${Date.now()}`, false);
  try {
    return await criticGate(critic, sampler, p.stateTasks, reference, p.o.design);
  } finally {
    critic.dispose();
    sampler.model.dispose();
  }
}
