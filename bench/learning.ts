// The learning benchmark: starter policy -> simulated collection on ColBench-mini train tasks -> zero-shot,
// rejection fine-tuning, multi-turn DPO and SWEET-RL -> evaluation on held-out ColBench-mini test tasks with the
// rule-based simulator. Prints a table (success rate and % tests passed with 95% intervals) and one JSON line.
//
//   npm run bench:learning -- [--tasks 60] [--episodes-per-task 4] [--eval-episodes-per-task 4] [--seed 1234]
//                             [--max-steps N] [--starter-steps N] [--dir data/bench/learning] [--keep]
//
// Everything lives in a throwaway PGlite directory under --dir (deleted at the end unless --keep); the starter
// policy is built once under --dir/starter and reused.
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import os from 'node:os';
import { openDatabase } from '../prisma/db.ts';
import { migrate } from '../prisma/migrate.ts';
import { importTasks } from '../prisma/task-store.ts';
import { generateMiniTasks } from '../tasks/mini.ts';
import { initBackend } from '../trainer/model/backend.ts';
import { ensureStarterPolicy } from '../trainer/model/starter.ts';
import { evaluateVersion, type EvaluationReport } from '../trainer/evaluate.ts';
import { trainConfig } from '../trainer/presets.ts';
import { createRun, executeRun, type Algorithm } from '../trainer/runs.ts';
import { createScorer } from '../tasks/scorer.ts';
import { loadConfig } from '../bin/config.ts';
import { ClipImageEmbedder } from '../trainer/model/clip.ts';
import { simulate } from '../trainer/simulate.ts';
import { formatPercent } from '../tasks/stats.ts';

function arg(name: string, fallback: number): number;
function arg(name: string, fallback: string): string;
function arg(name: string, fallback: number | string): number | string {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = process.argv[i + 1];
  if (v === undefined) throw new Error(`--${name} needs a value`);
  if (typeof fallback === 'number') {
    const n = Number(v);
    if (!Number.isFinite(n)) throw new Error(`--${name} must be a number, got ${v}`);
    return n;
  }
  return v;
}

const seed = arg('seed', 1234);
const taskCount = arg('tasks', 60);
const perTask = arg('episodes-per-task', 4);
const evalPerTask = arg('eval-episodes-per-task', 4);
const maxStepsArg = arg('max-steps', 0);
const starterSteps = arg('starter-steps', 0);
const dir = resolve(arg('dir', 'data/bench/learning'));
const keep = process.argv.includes('--keep');
const t0 = Date.now();
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(0)} s`;
const log = (line: string) => console.error(`[${elapsed()}] ${line}`);

const backend = await initBackend();
mkdirSync(dir, { recursive: true });
const pgliteDir = join(dir, `pglite-${Date.now()}`);
const db = await openDatabase({ pgliteDir });
// Scored as `sweetloop evaluate` would be: CLIP for frontend pages when CLIP_MODEL_DIR is configured.
const clipDir = loadConfig().CLIP_MODEL_DIR;
const embedder = clipDir ? await ClipImageEmbedder.load(clipDir, { initBackend: false }) : undefined;
const scorer = createScorer({ embedder });
const timings: Record<string, number> = {};
const time = async <T>(label: string, fn: () => Promise<T>): Promise<T> => {
  const s = Date.now();
  try {
    return await fn();
  } finally {
    timings[label] = (Date.now() - s) / 1000;
  }
};

try {
  await migrate(db);
  const tasks = generateMiniTasks({ seed, count: taskCount });
  await importTasks(db.prisma, tasks);
  const trainTasks = tasks.filter((t) => t.split === 'train').length;
  const testTasks = tasks.length - trainTasks;
  log(`${trainTasks} train and ${testTasks} test ColBench-mini tasks; backend ${backend.name}, ${os.cpus().length} CPUs`);

  const starterDir = join(dir, 'starter');
  const starter = await time('starter', () => ensureStarterPolicy({ dir: starterDir, seed, progress: 'lines', log, ...(starterSteps > 0 ? { steps: starterSteps } : {}) }));
  const zero = await db.prisma.policyVersion.create({
    data: { name: 'zero-shot', algorithm: 'starter', checkpointPath: starterDir, checkpointSha256: starter.sha256, status: 'deployed', deployedAt: new Date() },
  });

  const collected = await time('collect', () =>
    simulate(db.prisma, zero, scorer, { kind: 'backend', split: 'train', episodes: trainTasks * perTask, seed, store: true, log }),
  );
  const meanTrain = collected.reduce((a, g) => a + g.evaluation.score, 0) / collected.length;
  log(`collected ${collected.length} simulated sessions: mean score ${(meanTrain * 100).toFixed(1)}%, ${collected.filter((g) => g.evaluation.success).length} successes`);

  const versions = [zero];
  const trainSummaries: Record<string, unknown> = {};
  for (const algorithm of ['rft', 'mtdpo', 'sweet'] as Algorithm[]) {
    const ctx = { prisma: db.prisma, checkpointRoot: join(dir, 'checkpoints'), progress: 'lines' as const, log };
    try {
      const v = await time(`train:${algorithm}`, async () => {
        const run = await createRun(ctx, {
          algorithm,
          preset: 'cpu-small',
          train: trainConfig('cpu-small', { seed, ...(maxStepsArg > 0 ? { maxSteps: maxStepsArg } : {}) }),
          fromVersionId: zero.id,
          fromVersionName: zero.name,
          fromCheckpoint: starterDir,
          kind: 'backend',
          ratingWeight: 0,
          includeSimulated: true,
        });
        return executeRun(ctx, run.id);
      });
      versions.push(v);
      trainSummaries[algorithm] = (v.metrics as Record<string, unknown>)?.training;
    } catch (err) {
      log(`${algorithm}: training failed: ${(err as Error).message}`);
      trainSummaries[algorithm] = { error: (err as Error).message };
    }
  }

  const reports: EvaluationReport[] = [];
  for (const v of versions) {
    const r = await time(`eval:${v.name}`, () =>
      evaluateVersion(db.prisma, v, scorer, { kind: 'backend', split: 'test', episodes: testTasks * evalPerTask, seed: seed + 1, store: false }),
    );
    reports.push(r);
    log(`${v.name}: ${formatPercent(r.score)} tests passed, success ${formatPercent(r.success)}`);
  }

  const label = (name: string) => (name === 'zero-shot' ? 'zero-shot (starter)' : name.startsWith('rft') ? 'rejection FT' : name.startsWith('mtdpo') ? 'multi-turn DPO' : 'SWEET-RL');
  console.log(`\nColBench-mini backend, ${testTasks} held-out tasks x ${evalPerTask} games, rule-based simulator (95% intervals)`);
  console.log(`${'policy'.padEnd(22)} ${'success rate %'.padEnd(24)} ${'% tests passed'.padEnd(24)} turns`);
  for (const r of reports) {
    console.log(`${label(r.version).padEnd(22)} ${formatPercent(r.success).padEnd(24)} ${formatPercent(r.score).padEnd(24)} ${r.meanAgentTurns.toFixed(2)}`);
  }
  console.log(
    JSON.stringify({
      bench: 'learning',
      seed,
      backend: backend.name,
      cpus: os.cpus().length,
      trainTasks,
      testTasks,
      collectedSessions: collected.length,
      collectedMeanScore: meanTrain,
      evalGames: testTasks * evalPerTask,
      results: reports.map((r) => ({ policy: label(r.version), version: r.version, success: r.success, testsPassed: r.score, successes: r.successes, meanAgentTurns: r.meanAgentTurns })),
      training: trainSummaries,
      seconds: timings,
      totalSeconds: (Date.now() - t0) / 1000,
    }),
  );
} finally {
  await scorer.close();
  embedder?.dispose();
  await db.close();
  if (!keep) rmSync(pgliteDir, { recursive: true, force: true });
}
