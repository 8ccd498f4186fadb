// The credit-assignment benchmark with a known optimum (design: bench/credit/README.md; tasks/credit.ts). Per
// seed: a starter from the demonstrator's games -> one collection -> rejection FT, multi-turn DPO, SWEET-RL and
// SWEET-RL's actor with an oracle or a random ranker in place of its critic, all through the project's own runs,
// with the settings of bench/credit/settings.json -> every policy on the same held-out tasks (one greedy game and
// --games-per-task sampled games a task, common random numbers) and in the canonical states -> the critic gate.
// After the last seed, each method against the starter and SWEET-RL against each baseline, on sampled success and
// score, the seed the unit (credit/across.ts).
//
//   npm run bench:credit -- [--seeds 1,2,3,4,5] [--tasks 120] [--episodes-per-task 3] [--test-tasks 20]
//                           [--games-per-task 4] [--state-tasks 6] [--starter-games 1500]
//                           [--starter-steps 500 (v7: 1500)] [--starter-from DIR]
//                           [--starter-drill none|SHAPE:STEPS:LR:DRILLS[:ATTEMPTS]] [--design v7|v6|v5|v4|v3|v2|v1]
//                           [--methods rft,mtdpo,sweet,oracle,random]
//                           [--equal-updates N] [--settings FILE] [--dir data/bench/credit] [--keep]
//                           [--jobs N (seeds at once, one process each)] [--merge OUT1,OUT2 (earlier runs' output)]
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import os from 'node:os';
import { parseArgs } from 'node:util';
import {} from '../tasks/credit.ts';
import { demonstratorSuccess } from '../tasks/credit-demonstrator.ts';
import { initBackend } from '../trainer/model/backend.ts';
import { formatStarterCheck } from './credit-starter.ts';
import { acrossSeedsReport, readSeedLines, type SeedResult } from './credit/across.ts';
import { runSeedsInChildren } from './credit/jobs.ts';
import {
  gateLines,
  gatePasses,
  greedyTable,
  sampledTable,
  statesTable,
  GATE_THRESHOLD,
  type PolicyRow,
} from './credit/report.ts';
import { gateCritic, playPolicy, prepareSeed, seedFlags, seedOptionsFrom, trainMethod } from './credit/seed.ts';
import { METHODS, readSettings, SETTINGS_FILE, type Method } from './credit/settings.ts';
import type { CriticGate } from './credit/states.ts';

const { values: a } = parseArgs({
  options: {
    seeds: { type: 'string', default: '1' },
    ...seedFlags(),
    methods: { type: 'string', default: METHODS.join(',') },
    'equal-updates': { type: 'string' },
    settings: { type: 'string', default: SETTINGS_FILE },
    dir: { type: 'string', default: 'data/bench/credit' },
    keep: { type: 'boolean', default: false },
    jobs: { type: 'string', default: '1' },
    merge: { type: 'string' },
  },
});
const seeds = String(a.seeds).split(',').map(Number);
if (seeds.some((s) => !Number.isInteger(s)))
  throw new Error(`--seeds must be whole numbers separated by commas, got ${a.seeds}`);
const methods = String(a.methods).split(',') as Method[];
const unknown = methods.filter((m) => !METHODS.includes(m));
if (unknown.length) throw new Error(`--methods: unknown ${unknown.join(', ')} (known: ${METHODS.join(', ')})`);
const equalUpdates = a['equal-updates'] ? Number(a['equal-updates']) : null;
if (equalUpdates !== null && !(Number.isInteger(equalUpdates) && equalUpdates > 0))
  throw new Error(`--equal-updates must be a positive whole number, got ${a['equal-updates']}`);
const jobs = Number(a.jobs);
if (!(Number.isInteger(jobs) && jobs > 0)) throw new Error(`--jobs must be a positive whole number, got ${a.jobs}`);
const settings = readSettings(resolve(String(a.settings)));
const LABEL: Record<Method | 'starter', string> = {
  starter: 'starter',
  rft: 'rejection FT',
  mtdpo: 'multi-turn DPO',
  sweet: 'SWEET-RL',
  oracle: 'oracle control',
  random: 'random control',
};

const t0 = Date.now();
const log = (line: string) => console.error(`[${((Date.now() - t0) / 1000).toFixed(0)} s] ${line}`);
// Every seed's sizes from the flags, checked once here (a bad flag fails before any work).
const sizes = (seed: number, dir: string) => seedOptionsFrom(a, { seed, dir, evalSplit: 'test', log });
const design = sizes(0, '').design;

// Chosen once, by the first seed run in this process (neither --merge nor --jobs's parent trains).
let backendChoice: ReturnType<typeof initBackend> | undefined;

async function runSeed(seed: number): Promise<SeedResult> {
  const backend = await (backendChoice ??= initBackend());
  const s0 = Date.now();
  const cpu0 = process.cpuUsage();
  const dir = resolve(join(String(a.dir), `seed-${seed}`));
  mkdirSync(dir, { recursive: true });
  const seconds: Record<string, number> = {};
  const timed = async <T>(label: string, fn: () => Promise<T>): Promise<T> => {
    const s = Date.now();
    try {
      return await fn();
    } finally {
      seconds[label] = (Date.now() - s) / 1000;
    }
  };
  log(
    `seed ${seed}, design ${design}, backend ${backend.name}, load ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}; settings ${settings.chosenOn}`,
  );
  const p = await timed('prepare', () => prepareSeed(sizes(seed, dir)));
  try {
    const rows: (PolicyRow & { method: Method | 'starter' })[] = [];
    rows.push({
      method: 'starter',
      policy: LABEL.starter,
      effort: {},
      ...(await timed('eval:starter', () => playPolicy(p, p.zero))),
    });
    let gate: CriticGate | null = null;
    for (const m of methods) {
      try {
        const t = await timed(`train:${m}`, () =>
          trainMethod(p, m, settings.methods[m], { policyUpdates: equalUpdates }),
        );
        if (t.criticDir)
          gate = await timed('gate', () => gateCritic(p, t.criticDir!, settings.methods.sweet.rankingReference));
        const note =
          m === 'sweet' && gate && !gatePasses(gate)
            ? `critic gate failed (within-state ${gate.withinStateAccuracy.toFixed(2)}, useful over repeated ${gate.byKind.usefulOverRepeated.accuracy.toFixed(2)}; each must be >= ${GATE_THRESHOLD}): not credit assignment`
            : undefined;
        rows.push({
          method: m,
          policy: LABEL[m],
          effort: t.effort,
          ...(note ? { note } : {}),
          ...(await timed(`eval:${m}`, () => playPolicy(p, t.version))),
        });
      } catch (err) {
        log(`${m}: training failed: ${(err as Error).message}`);
      }
    }
    const cpu = process.cpuUsage(cpu0);
    console.log(
      `\nCredit family (design ${design}), seed ${seed}: ${p.evalTasks.length} held-out tasks, one greedy game and ${p.o.gamesPerTask} sampled games each; optimum success 100 %, 4 messages (path UUUA); the demonstrator's exact success ${(demonstratorSuccess(undefined, design) * 100).toFixed(2)} %. Collection: ${p.collected.sessions} sessions, ${p.collected.successes} successes.${equalUpdates ? ` Every policy phase ${equalUpdates} updates.` : ''}`,
    );
    for (const line of [
      ...greedyTable(rows, design),
      ...statesTable(rows),
      ...sampledTable(rows),
      ...(gate ? gateLines('SWEET-RL', gate) : ['critic gate: no SWEET-RL critic this seed']),
      ...formatStarterCheck(p.starterCheck),
    ])
      console.log(line);
    console.log(
      JSON.stringify({
        bench: 'credit',
        design,
        seed,
        settings: { file: String(a.settings), chosenOn: settings.chosenOn, equalUpdates },
        backend: backend.name,
        cpus: os.cpus().length,
        loadavgEnd: os.loadavg(),
        evalTasks: p.evalTasks.length,
        gamesPerTask: p.o.gamesPerTask,
        collected: p.collected,
        starter: {
          recipe: p.starter.recipe,
          loss: [p.starter.initialLoss, p.starter.finalLoss],
          check: p.starterCheck,
        },
        policies: Object.fromEntries(
          rows.map((r) => [
            r.method,
            {
              sampledSuccess: r.sampled.success.estimate,
              sampledSuccessCi: [r.sampled.success.lo, r.sampled.success.hi],
              sampledScore: r.sampled.score.estimate,
              sampledScoreCi: [r.sampled.score.lo, r.sampled.score.hi],
              greedyPath: r.greedy.path,
              greedyPaths: r.greedy.paths,
              updates: Object.values(r.effort).reduce((n, e) => n + e.updates, 0),
              effort: r.effort,
              states: r.states,
            },
          ]),
        ),
        critic: gate
          ? {
              withinStateAccuracy: gate.withinStateAccuracy,
              passes: gatePasses(gate),
              pairs: gate.pairs,
              byKind: gate.byKind,
              meanScore: gate.meanScore,
            }
          : null,
        seconds,
        wallSeconds: (Date.now() - s0) / 1000,
        cpuSeconds: (cpu.user + cpu.system) / 1e6,
      }),
    );
    return {
      seed,
      success: Object.fromEntries(rows.map((r) => [r.method, r.sampled.success.estimate])),
      score: Object.fromEntries(rows.map((r) => [r.method, r.sampled.score.estimate])),
    };
  } finally {
    await p.close();
    if (!a.keep) rmSync(join(dir, 'checkpoints'), { recursive: true, force: true });
  }
}

async function eachSeedHere(): Promise<SeedResult[]> {
  const out: SeedResult[] = [];
  for (const seed of seeds) out.push(await runSeed(seed));
  return out;
}
const merged = a.merge ? readSeedLines(String(a.merge).split(',')) : null;
if (merged && merged.design !== design)
  throw new Error(`--merge: the runs played design ${merged.design}; pass --design ${merged.design}`);
const perSeed: SeedResult[] = merged
  ? merged.seeds
  : jobs > 1 && seeds.length > 1
    ? await runSeedsInChildren(seeds, jobs, process.argv.slice(2))
    : await eachSeedHere();
if (perSeed.length > 1) {
  const bySuccess = acrossSeedsReport(perSeed, 'success');
  const byScore = acrossSeedsReport(perSeed, 'score');
  console.log(`\n${[...bySuccess.lines, ...byScore.lines].join('\n')}`);
  console.log(
    JSON.stringify({
      bench: 'credit',
      design,
      seeds: perSeed.map((s) => s.seed),
      acrossSeeds: bySuccess.versus,
      acrossSeedsScore: byScore.versus,
      perSeed,
    }),
  );
}
