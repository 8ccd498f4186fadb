// npm run bench:starter — how much reward the starter policy earns: builds (or reuses) the starter with the
// standard recipe (or overrides), then plays ColBench-mini TEST-split tasks against the rule-based collaborator
// with the protocol's playEpisode, greedily and with temperature sampling, and scores every answer with the
// sandboxed backend evaluator. The scripted expert and the non-asking agent play the same tasks as reference
// points. Prints a table and one JSON line.
//   npm run bench:starter [-- --seed 1234] [-- --tasks 10] [-- --samples 2] [-- --temperature 0.7]
//     [-- --dir DIR | --checkpoint DIR] [-- --steps N --games N --tokens-per-step N] [-- --show N]
//     [-- --task-seed N] [-- --lr X] [-- --varied F] [-- --drills F] [-- --drill-steps N [-- --drill-lr X]]
// Besides the score it counts what the answer copied from the dialogue: the function's name (given only in
// the description) and the withheld facts' values. --task-seed plays another seed's tasks (not the learning
// benchmark's held-out ones); --lr, --varied, --drills and --drill-steps/--drill-lr (with twice as many drills
// as updates) override the recipe's peakLr, variedTasks, copyDrills and copyDrillPhase.
// --checkpoint evaluates any Hugging Face model directory as it is (no build); --dir is where the starter is
// built and reused (default data/bench/starter-SEED). Build CPU seconds are kept in DIR.build.json, so a reused
// starter still reports what its build cost.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Agent } from '../tasks/agent.ts';
import { evaluateBackend } from '../tasks/backend-eval.ts';
import { createExpertAgent, createNonAskingAgent } from '../tasks/expert.ts';
import { generateMiniTasks } from '../tasks/mini.ts';
import { miniMeta } from '../tasks/mini-model.ts';
import type { BackendTask, TaskRecord } from '../tasks/model.ts';
import { playEpisode } from '../tasks/protocol.ts';
import { createRuleSimulator } from '../tasks/simulator.ts';
import { initBackend } from '../trainer/model/backend.ts';
import { LoadedPolicy } from '../trainer/model/loaded-policy.ts';
import { ensureStarterPolicy } from '../trainer/recipes/starter.ts';
import type { StarterOptions } from '../trainer/recipes/starter.ts';

const args = process.argv.slice(2);
function opt(name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return undefined;
  const v = args[i + 1];
  if (v === undefined || v.startsWith('--')) throw new Error(`--${name} needs a value`);
  return v;
}
function intOpt(name: string, def: number, min = 0): number {
  const raw = opt(name);
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got ${raw}`);
  return n;
}
const seed = intOpt('seed', 1234);
// The tasks played: by default the test split of the starter's own seed; another seed's tasks measure the
// starter without looking at the learning benchmark's held-out tasks.
const taskSeed = intOpt('task-seed', seed);
const numTasks = intOpt('tasks', 10, 1);
const samples = intOpt('samples', 2);
const temperature = Number(opt('temperature') ?? '0.7');
const maxTokens = intOpt('max-tokens', 512, 1);
const show = intOpt('show', 0);
const checkpoint = opt('checkpoint');
const dir = resolve(opt('dir') ?? `data/bench/starter-${seed}`);
if (!(temperature > 0)) throw new Error('--temperature must be > 0 (greedy games are always played)');

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

const backend = await initBackend();
let modelDir: string;
let build:
  | { reused: boolean; cpuSeconds: number | null; numParameters: number; finalLoss?: number; recipe?: unknown }
  | undefined;
if (checkpoint) {
  modelDir = resolve(checkpoint);
} else {
  modelDir = dir;
  await mkdir(dirname(dir), { recursive: true });
  const options: StarterOptions = {
    dir,
    seed,
    progress: 'lines',
    log: (l) => console.error(l),
    ...(opt('steps') ? { steps: intOpt('steps', 0, 1) } : {}),
    ...(opt('games') ? { games: intOpt('games', 0, 1) } : {}),
    ...(opt('tokens-per-step') ? { tokensPerStep: intOpt('tokens-per-step', 0, 64) } : {}),
    ...(opt('varied') ? { variedTasks: Number(opt('varied')) } : {}),
    ...(opt('drills') ? { copyDrills: Number(opt('drills')) } : {}),
    ...(opt('drill-steps')
      ? {
          copyDrillPhase: {
            steps: intOpt('drill-steps', 0, 1),
            peakLr: Number(opt('drill-lr') ?? '1e-3'),
            drills: 2 * intOpt('drill-steps', 0, 1),
          },
        }
      : {}),
    ...(opt('lr') ? { peakLr: Number(opt('lr')) } : {}),
  };
  const r = await ensureStarterPolicy(options);
  const sidecar = `${dir}.build.json`;
  if (r.report) {
    const { losses: _losses, ...rest } = r.report;
    writeFileSync(sidecar, JSON.stringify({ sha256: r.sha256, ...rest }, null, 2) + '\n');
  }
  const saved = existsSync(sidecar)
    ? (JSON.parse(readFileSync(sidecar, 'utf8')) as {
        sha256?: string;
        cpuSeconds?: number;
        finalLoss?: number;
        recipe?: unknown;
      })
    : undefined;
  const known = saved && saved.sha256 === r.sha256 ? saved : undefined;
  build = {
    reused: r.reused,
    cpuSeconds: known?.cpuSeconds ?? null,
    numParameters: r.numParameters,
    ...(known?.finalLoss !== undefined ? { finalLoss: known.finalLoss } : {}),
    ...(known?.recipe !== undefined ? { recipe: known.recipe } : {}),
  };
}

// Held-out tasks: the starter trains on the train split of the same generator.
const tasks: TaskRecord[] = [];
for (let count = numTasks * 5; tasks.length < numTasks; count *= 2) {
  tasks.splice(
    0,
    tasks.length,
    ...generateMiniTasks({ seed: taskSeed, count })
      .filter((t) => t.split === 'test')
      .slice(0, numTasks),
  );
}

const policy = await LoadedPolicy.load(modelDir);
function policyAgent(temp: number, sampleSeed: number): Agent {
  let calls = 0;
  return {
    name: 'starter',
    async reply(dialogue) {
      const [r] = await policy.generate([{ messages: dialogue }], {
        temperature: temp,
        topP: temp === 0 ? 1 : 0.95,
        maxTokens,
        seed: sampleSeed + calls++,
      });
      return { text: r!.text, promptTokens: r!.promptTokens, completionTokens: r!.tokenIds.length };
    },
  };
}

interface Game {
  task: number;
  mode: string;
  score: number;
  success: boolean;
  turns: number;
  answered: boolean;
  loads: boolean;
  answer: string;
  /** The answer defines the function under the name the person gave. */
  nameRight: boolean;
  /** Fraction of the withheld facts whose constant the answer sets to the true value. */
  factsRight: number;
  error?: string;
}

/** What the answer took over from the dialogue: the function's name (only in the description) and the facts. */
function copied(task: TaskRecord, answer: string): { nameRight: boolean; factsRight: number } {
  const meta = miniMeta(task)!;
  const lines = new Set(answer.split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()));
  const right = meta.withheld.filter((f) => lines.has(`${f.key} = ${f.answer}`)).length;
  return { nameRight: answer.includes(`def ${meta.functionName}(`), factsRight: right / meta.withheld.length };
}

async function play(task: TaskRecord, agent: Agent, mode: string, index: number): Promise<Game> {
  let episode;
  try {
    episode = await playEpisode({ task, agent, collaborator: createRuleSimulator(task) });
  } catch (err) {
    // A policy that rambles until the dialogue outgrows its context never answers: a failed game, not a crash.
    return {
      task: index,
      mode,
      score: 0,
      success: false,
      turns: 0,
      answered: false,
      loads: false,
      answer: '',
      nameRight: false,
      factsRight: 0,
      error: (err as Error).message,
    };
  }
  const ev = await evaluateBackend(task as BackendTask, episode.answer, { label: `bench-starter-${index}` });
  const g: Game = {
    task: index,
    mode,
    score: ev.score,
    success: ev.success,
    turns: episode.turns.filter((t) => t.role === 'agent').length,
    answered: episode.endReason === 'answered',
    loads: !ev.error,
    answer: episode.answer,
    ...copied(task, episode.answer),
  };
  if (ev.error) g.error = ev.error;
  return g;
}

const games: Game[] = [];
const playStart = cpu();
const wallStart = Date.now();
const expert = createExpertAgent({ tasks, name: 'expert' });
const nonAsking = createNonAskingAgent({ tasks });
for (let i = 0; i < tasks.length; i++) {
  const task = tasks[i]!;
  games.push(await play(task, expert, 'expert', i));
  games.push(await play(task, nonAsking, 'non-asking', i));
  games.push(await play(task, policyAgent(0, 0), 'starter greedy', i));
  for (let s = 0; s < samples; s++)
    games.push(await play(task, policyAgent(temperature, 1000 * (s + 1) + i * 17), `starter T=${temperature}`, i));
  const last = games.filter((g) => g.task === i && g.mode.startsWith('starter'));
  console.error(`task ${i + 1}/${tasks.length}: starter scores ${last.map((g) => g.score.toFixed(2)).join(' ')}`);
}
policy.dispose();

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
function summary(mode: string) {
  const gs = games.filter((g) => g.mode === mode);
  const scores = gs.map((g) => g.score);
  const m = mean(scores);
  const sd = Math.sqrt(mean(scores.map((s) => (s - m) ** 2)) * (gs.length / Math.max(1, gs.length - 1)));
  // Spread of scores among the games of one task: what a learner comparing its own samples has to work with.
  const perTask = tasks.map((_, i) => gs.filter((g) => g.task === i).map((g) => g.score));
  const tasksWithSpread = perTask.filter((s) => s.length > 1 && Math.max(...s) > Math.min(...s)).length;
  return {
    mode,
    games: gs.length,
    meanTestsPassed: m,
    ci95: gs.length > 1 ? 1.96 * (sd / Math.sqrt(gs.length)) : null,
    successRate: mean(gs.map((g) => (g.success ? 1 : 0))),
    meanTurns: mean(gs.map((g) => g.turns)),
    answerRate: mean(gs.map((g) => (g.answered ? 1 : 0))),
    loadRate: mean(gs.map((g) => (g.loads ? 1 : 0))),
    anyTestPassed: mean(gs.map((g) => (g.score > 0 ? 1 : 0))),
    nameRight: mean(gs.map((g) => (g.nameRight ? 1 : 0))),
    factsRight: mean(gs.map((g) => g.factsRight)),
    tasksWithSpread: samples > 1 && mode.includes('T=') ? tasksWithSpread : null,
  };
}
const modes = ['expert', 'non-asking', 'starter greedy', ...(samples > 0 ? [`starter T=${temperature}`] : [])];
const rows = modes.map(summary);

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
console.log(
  `\nColBench-mini test split, task seed ${taskSeed}, ${tasks.length} tasks, rule-based collaborator, backend ${backend.name}`,
);
console.log(
  `model ${modelDir}${build ? ` (${build.reused ? 'reused' : 'built'}, ${build.numParameters.toLocaleString('en')} parameters, build ${build.cpuSeconds === null ? '?' : build.cpuSeconds.toFixed(0)} CPU s)` : ''}`,
);
console.log(
  '| agent | games | % tests passed (95% CI) | success | turns | answer rate | code loads | any test passed | name right | facts right |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(
    `| ${r.mode} | ${r.games} | ${pct(r.meanTestsPassed)}${r.ci95 === null ? '' : ` ± ${pct(r.ci95)}`} | ${pct(r.successRate)} | ${r.meanTurns.toFixed(1)} | ` +
      `${pct(r.answerRate)} | ${pct(r.loadRate)} | ${pct(r.anyTestPassed)} | ${pct(r.nameRight)} | ${pct(r.factsRight)} |`,
  );
}
const sampled = rows.find((r) => r.tasksWithSpread !== null);
if (sampled) console.log(`sampled games differ in score on ${sampled.tasksWithSpread}/${tasks.length} tasks`);

for (const g of games.filter((x) => x.mode.startsWith('starter') && !x.success).slice(0, show)) {
  console.log(
    `\n--- task ${g.task} (${String((tasks[g.task]!.meta as { template?: string }).template)}), ${g.mode}, score ${g.score.toFixed(2)}${g.error ? `, ${g.error}` : ''}\n${g.answer}`,
  );
}

console.log(
  JSON.stringify({
    bench: 'starter',
    seed,
    taskSeed,
    tasks: tasks.length,
    samples,
    temperature,
    maxTokens,
    backend: backend.name,
    model: modelDir,
    build: build ?? null,
    playCpuSeconds: cpu() - playStart,
    playWallSeconds: (Date.now() - wallStart) / 1000,
    results: rows,
  }),
);
