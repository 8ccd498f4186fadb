// Training runs: `sweetloop train --algo sweet|mtdpo|rft`. A run is recorded in TrainingRun (config, data
// snapshot = session ids and rewards, and the people's preferences its critic uses, status, per-update
// TrainingStep metrics, log; written by prisma/run-store.ts) and executed as named phases (PHASES below: sweet =
// critic -> collect -> actor; mtdpo; rft; each phase's module exports its name), then published; evaluation and
// promotion follow in trainer/cli.ts and trainer/service.ts. Every `checkpointEvery` updates the phase's weights
// and optimizer state go into a fresh directory, and only then does the run's progress (phase, step, RNG state:
// TrainingRun.progress, what a resume reads, copied to progress.json for whoever looks at the directory) point
// at it, so a run killed at any moment resumes from a consistent state and, since batch order and sampling are
// pure functions of (seed, phase, step), ends with the same weights as an uninterrupted run. The run ends by
// publishing a candidate PolicyVersion (checkpoint + sha256, parent, algorithm, metrics).
import { existsSync } from 'node:fs';
import { appendFile, mkdir, readFile, readdir, rm, truncate } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import cliProgress from 'cli-progress';
import type { PrismaClient, Prisma, TrainingRun, PolicyVersion } from '../prisma/generated/client.ts';
import { createTrainingRun, markRunFailed, markRunRunning, publishRun, recordTrainingStep, saveRunProgress } from '../prisma/run-store.ts';
import { adapterServing, type Serving } from './policies/serving.ts';
import type { TaskKind } from '../tasks/model.ts';
import { ACTOR_PHASE, actorPhase, COLLECT_PHASE, criticGap, pairsForState, readActorPairs, selectStates } from './actor.ts';
import { widestGaps } from './pairs.ts';
import { peoplePairs } from '../prisma/preference-store.ts';
import { saveSessionAdvantages } from '../prisma/dashboard-store.ts';
import { Critic, CRITIC_PHASE, criticPairs, criticPhase, type PeoplePair } from './critic.ts';
import { loadTrajectories, selectTrainingData, type DataFilter, type Trajectory } from './data.ts';
import { checkpointSha256, loadOptimizer, saveCheckpoint, saveOptimizer } from './model/checkpoint.ts';
import { addLora, loadLora, mergeLora, saveLora } from './model/lora.ts';
import { writeFileAtomic } from './model/safetensors.ts';
import { MTDPO_PHASE, mtdpoPhase, preparePolicyExamples, trajectoryPairs } from './mtdpo.ts';
import type { PresetName, TrainConfig } from './presets.ts';
import { rehearsalAnchor, rehearsalSet } from './rehearsal.ts';
import { RFT_PHASE, rftPhase } from './rft.ts';
import type { Phase, PhaseAnchor } from './schedule.ts';
import { loadModel, type LoadedModel } from './sequences.ts';
import { copyTokenizerFiles } from './versions.ts';

export type Algorithm = 'sweet' | 'mtdpo' | 'rft';
export const ALGORITHMS: readonly Algorithm[] = ['sweet', 'mtdpo', 'rft'];

export interface RunConfig {
  algorithm: Algorithm;
  preset: PresetName;
  train: TrainConfig;
  fromVersionId: string;
  fromVersionName: string;
  fromCheckpoint: string;
  kind: TaskKind;
  ratingWeight: number;
  /** The filter that chose the run's data (trainer/data.ts). */
  data: DataFilter;
  /**
   * sweet only: people's pairwise preferences between two of the run's sessions are extra Bradley-Terry pairs for
   * the critic (TRAINER_USE_PREFERENCES, `sweetloop train --[no-]preferences`). Unset (runs created before): off.
   */
  preferences?: boolean;
  /**
   * Set when the run starts from a version served by an OpenAI-compatible server whose base model is local
   * (fromCheckpoint = its base-model directory): a LoRA run then publishes an adapter for that server. Holds the
   * serving settings the adapter version inherits, and the endpoint version it is loaded on.
   */
  servedBy?: Serving & { endpointVersionId: string };
  /**
   * A LoRA run that continues an adapter version (trainer/training-source.ts): that adapter's directory. The
   * policy starts as the base with this adapter (its sampler and DPO reference too), and goes on training it.
   */
  fromAdapter?: string;
}

export interface RunContext {
  prisma: PrismaClient;
  checkpointRoot: string;
  progress?: 'bar' | 'lines' | 'none';
  log?: (line: string) => void;
  /** Testing aid standing in for a kill: stop (throwing RunInterrupted) once this many updates ran in this process. */
  stopAfterSteps?: number;
}

export class RunInterrupted extends Error {
  override name = 'RunInterrupted';
}

interface Progress {
  /** Phases finished, in order. */
  done: string[];
  /** The latest checkpoint of the phase in progress. */
  current?: { phase: string; step: number; dir: string };
  /** Candidate states collected so far (sweet). */
  collected?: number;
  /** The seed every random choice of the run derives from (with the phase and step). */
  rng: { algorithm: 'mulberry32'; seed: number };
}

/** A person's preference a run uses: the Preference row, and its sessions in chosen/rejected order. */
interface SnapshotPreference extends PeoplePair {
  id: string;
}

/** Creates a run: its config and data snapshot. Fails with a clear message when there is nothing to learn from. */
export async function createRun(ctx: RunContext, cfg: RunConfig): Promise<TrainingRun> {
  const { trajectories: data, counts, filter } = await selectTrainingData(ctx.prisma, { ratingWeight: cfg.ratingWeight, kind: cfg.kind, split: 'train' }, cfg.data);
  // Only judgements between two sessions the run trains on: the critic scores nothing else.
  const preferences: SnapshotPreference[] | undefined =
    cfg.algorithm === 'sweet' && cfg.preferences ? (await peoplePairs(ctx.prisma, data.map((t) => t.sessionId))).map((p) => ({ id: p.id, chosen: p.chosen, rejected: p.rejected })) : undefined;
  return createTrainingRun(
    ctx.prisma,
    {
      algorithm: cfg.algorithm,
      config: cfg as unknown as Prisma.InputJsonObject,
      // Exactly which sessions (and people's preferences between them), and the filter that chose them.
      dataSnapshot: { filter, counts, sessions: data.map((t) => ({ id: t.sessionId, reward: t.reward, simulated: t.simulated })), ...(preferences ? { preferences } : {}) } as unknown as Prisma.InputJsonObject,
    },
    (id) => resolve(join(ctx.checkpointRoot, 'runs', id)),
  );
}

/** The unfinished runs (queued, running, or failed by a kill), oldest first. */
export async function unfinishedRuns(prisma: PrismaClient): Promise<TrainingRun[]> {
  return prisma.trainingRun.findMany({ where: { status: { in: ['queued', 'running'] } }, orderBy: { createdAt: 'asc' } });
}

/** Everything a run's phases share: where it writes, what it has done so far, its log and metrics. */
interface RunState {
  ctx: RunContext;
  runId: string;
  cfg: RunConfig;
  dir: string;
  progress: Progress;
  logLines: string[];
  metrics: Record<string, Record<string, number>>;
  stepsThisProcess: number;
  say(line: string): void;
}

/** Executes (or resumes) a run to its end and returns the candidate version it published. */
export async function executeRun(ctx: RunContext, runId: string): Promise<PolicyVersion> {
  const run = await ctx.prisma.trainingRun.findUnique({ where: { id: runId }, include: { policyVersions: true } });
  if (!run) throw new Error(`no training run ${runId}`);
  if (run.status === 'succeeded' && run.policyVersions[0]) return run.policyVersions[0];
  if (run.status === 'cancelled') throw new Error(`training run ${runId} was cancelled`);
  const r = await openRun(ctx, run);
  let policy: LoadedModel | null = null;
  try {
    const data = await snapshotData(r, run);
    policy = await PHASES[r.cfg.algorithm](r, data);
    return await publish(r, policy, data.length);
  } catch (err) {
    // A stand-in kill leaves the run as a kill would: running, resumable. A real error marks it failed.
    if (!(err instanceof RunInterrupted)) {
      r.say(`failed: ${(err as Error).message}`);
      await markRunFailed(ctx.prisma, runId, (err as Error).message, r.logLines.join('\n'));
    }
    throw err;
  } finally {
    policy?.model.dispose();
  }
}

/** The phases of each algorithm, in order; each returns the trained policy (the critic is an inner phase). */
const PHASES: Record<Algorithm, (r: RunState, data: Trajectory[]) => Promise<LoadedModel>> = {
  rft: (r, data) => rftPolicy(r, data),
  mtdpo: (r, data) => mtdpoPolicy(r, data),
  sweet: async (r, data) => {
    const criticDir = await trainCritic(r, data);
    const pairsFile = await collectCandidates(r, data, criticDir);
    return trainActor(r, pairsFile);
  },
};

/** Marks the run running and reads its progress from its row (a fresh run starts from nothing). */
async function openRun(ctx: RunContext, run: TrainingRun): Promise<RunState> {
  const cfg = run.config as unknown as RunConfig;
  const dir = run.checkpointDir!;
  await mkdir(dir, { recursive: true });
  const logLines: string[] = run.log ? run.log.split('\n').filter(Boolean) : [];
  const progress: Progress = (run.progress as unknown as Progress | null) ?? { done: [], rng: { algorithm: 'mulberry32', seed: cfg.train.seed } };
  const r: RunState = {
    ctx,
    runId: run.id,
    cfg,
    dir,
    progress,
    logLines,
    metrics: {},
    stepsThisProcess: 0,
    say(line) {
      logLines.push(`${new Date().toISOString()} ${line}`);
      ctx.log?.(line);
    },
  };
  await markRunRunning(ctx.prisma, run);
  r.say(
    progress.done.length || progress.current || progress.collected
      ? `resuming run ${run.id} (${JSON.stringify({ done: progress.done, current: progress.current, collected: progress.collected })})`
      : `starting run ${run.id}: ${cfg.algorithm} from ${cfg.fromVersionName}`,
  );
  return r;
}

async function saveProgress(r: RunState): Promise<void> {
  await saveRunProgress(r.ctx.prisma, r.runId, r.progress as unknown as Prisma.InputJsonObject, r.logLines.join('\n'));
  await writeFileAtomic(join(r.dir, 'progress.json'), JSON.stringify(r.progress, null, 2) + '\n');
}

async function finishPhase(r: RunState, name: string): Promise<void> {
  r.progress.done.push(name);
  delete r.progress.current;
  await saveProgress(r);
}

/** The snapshot fixes the data; a session deleted or flagged since is not used (and the log says so). */
async function snapshotData(r: RunState, run: TrainingRun): Promise<Trajectory[]> {
  const snapshot = (run.dataSnapshot as { sessions: { id: string; reward: number }[] }).sessions;
  const rewards = new Map(snapshot.map((s) => [s.id, s.reward]));
  const loaded = await loadTrajectories(r.ctx.prisma, { ratingWeight: r.cfg.ratingWeight, source: r.cfg.data.source, sessionIds: snapshot.map((s) => s.id) });
  if (loaded.length < snapshot.length) r.say(`${snapshot.length - loaded.length} session(s) of the snapshot are no longer usable (deleted, withdrawn or flagged): left out`);
  return loaded.map((t) => ({ ...t, reward: rewards.get(t.sessionId) ?? t.reward }));
}

/**
 * The people's preferences the snapshot recorded that still hold: the rater has not withdrawn or been deleted,
 * the answer is unchanged, and both sessions are still usable (`data`). A changed answer is left out rather than
 * followed, so the run trains on what its snapshot says or less, never on something else.
 */
async function snapshotPreferences(r: RunState, data: readonly Trajectory[]): Promise<PeoplePair[]> {
  const run = await r.ctx.prisma.trainingRun.findUniqueOrThrow({ where: { id: r.runId }, select: { dataSnapshot: true } });
  const recorded = (run.dataSnapshot as { preferences?: SnapshotPreference[] } | null)?.preferences ?? [];
  if (recorded.length === 0) return [];
  const key = (p: SnapshotPreference) => `${p.id}:${p.chosen}:${p.rejected}`;
  const holding = new Set((await peoplePairs(r.ctx.prisma, data.map((t) => t.sessionId))).map(key));
  const kept = recorded.filter((p) => holding.has(key(p)));
  if (kept.length < recorded.length) r.say(`${recorded.length - kept.length} preference(s) of the snapshot no longer hold (withdrawn, changed, or a session no longer usable): left out`);
  return kept.map((p) => ({ chosen: p.chosen, rejected: p.rejected }));
}

/** Runs a phase's updates from its latest checkpoint to the end, checkpointing every `checkpointEvery`. */
async function runUpdates(r: RunState, phase: Phase, lora: boolean, resumeFrom: { step: number; dir: string } | undefined): Promise<void> {
  const { ctx, cfg, runId } = r;
  let start = 0;
  if (resumeFrom) {
    await loadOptimizer(resumeFrom.dir, phase.optimizer);
    start = resumeFrom.step;
  }
  const bar =
    ctx.progress === 'bar'
      ? new cliProgress.SingleBar({ format: `${phase.name} [{bar}] {value}/{total} | loss {loss} | {eta_formatted} left`, stream: process.stderr, hideCursor: true }, cliProgress.Presets.shades_classic)
      : undefined;
  bar?.start(phase.totalSteps, start, { loss: '-' });
  try {
    for (let s = start; s < phase.totalSteps; s++) {
      const m = await phase.step(s);
      if (!Number.isFinite(m.loss)) throw new Error(`${phase.name}: loss became ${m.loss} at update ${s}`);
      r.metrics[phase.name] = m;
      await recordTrainingStep(ctx.prisma, runId, phase.name, s, m);
      bar?.update(s + 1, { loss: m.loss!.toFixed(4) });
      if (ctx.progress === 'lines' && ((s + 1) % Math.max(1, Math.round(phase.totalSteps / 10)) === 0 || s + 1 === phase.totalSteps)) {
        r.say(`${phase.name}: update ${s + 1}/${phase.totalSteps}, ${Object.entries(m).map(([k, v]) => `${k} ${Number(v.toPrecision(4))}`).join(', ')}`);
      }
      if ((s + 1) % cfg.train.checkpointEvery === 0 || s + 1 === phase.totalSteps) await checkpointPhase(r, phase, lora, s + 1);
      r.stepsThisProcess++;
      if (ctx.stopAfterSteps !== undefined && r.stepsThisProcess >= ctx.stopAfterSteps) throw new RunInterrupted(`stopped after ${r.stepsThisProcess} updates`);
    }
  } finally {
    bar?.stop();
  }
}

/** Writes the phase's weights and optimizer to a fresh directory, then points the run's progress at it. */
async function checkpointPhase(r: RunState, phase: Phase, lora: boolean, step: number): Promise<void> {
  const ck = join(r.dir, 'ckpt', `${phase.name}-${String(step).padStart(6, '0')}`);
  await rm(ck, { recursive: true, force: true });
  if (lora) await saveLora(ck, phase.model);
  else await saveCheckpoint(ck, phase.model);
  await saveOptimizer(ck, phase.optimizer);
  await copyTokenizerFiles(r.cfg.fromCheckpoint, ck);
  const previous = r.progress.current?.phase === phase.name ? r.progress.current.dir : undefined;
  r.progress.current = { phase: phase.name, step, dir: ck };
  await saveProgress(r);
  if (previous && previous !== ck) await rm(previous, { recursive: true, force: true });
}

/** Loads the policy a phase trains: from its latest checkpoint when resuming it. */
async function trainablePolicy(r: RunState, phaseName: string): Promise<{ m: LoadedModel; resume?: { step: number; dir: string } }> {
  const base = r.cfg.fromCheckpoint;
  const resume = r.progress.current?.phase === phaseName ? r.progress.current : undefined;
  const lora = r.cfg.train.lora;
  const m = await loadModel(resume && !lora ? resume.dir : base, `policy-${r.runId.slice(0, 8)}-${Date.now()}`, true);
  if (lora) {
    if (resume) await loadLora(resume.dir, m.model);
    else if (r.cfg.fromAdapter) await loadLora(r.cfg.fromAdapter, m.model);
    else addLora(m.model, { rank: lora.rank, alpha: lora.alpha, ...(lora.targetModules ? { targetModules: lora.targetModules } : {}), seed: r.cfg.train.seed });
  }
  // Tokenizer files travel with the base, whatever directory the weights came from.
  return { m: { ...m, dir: base }, ...(resume ? { resume: { step: resume.step, dir: resume.dir } } : {}) };
}

/** The policy as the run found it, frozen (a sampler, a DPO reference): the base, with the adapter it continues. */
async function startingPolicy(r: RunState, label: string): Promise<LoadedModel> {
  const m = await loadModel(r.cfg.fromCheckpoint, `${label}-${r.runId.slice(0, 8)}-${Date.now()}`, false);
  if (r.cfg.fromAdapter) await loadLora(r.cfg.fromAdapter, m.model);
  return m;
}

/** The rehearsal term of a policy phase (none when the configuration has no rehearsal). */
async function policyAnchor(r: RunState, m: LoadedModel): Promise<PhaseAnchor | undefined> {
  const set = await rehearsalSet(m, r.cfg.train);
  if (set.length) r.say(`rehearsal: ${set.length} dialogues, ${r.cfg.train.rehearsal!.perUpdate} an update, weight ${r.cfg.train.rehearsal!.coefficient}`);
  return rehearsalAnchor(m, set, r.cfg.train);
}

/** Rejection fine-tuning: SFT on the successful trajectories. */
async function rftPolicy(r: RunState, data: Trajectory[]): Promise<LoadedModel> {
  const t = await trainablePolicy(r, RFT_PHASE);
  const phase = rftPhase(t.m, data, r.cfg.train, await policyAnchor(r, t.m));
  await runUpdates(r, phase, !!r.cfg.train.lora, t.resume);
  phase.dispose();
  return t.m;
}

/** Multi-turn DPO: trajectory pairs of a task, DPO over all agent turns. */
async function mtdpoPolicy(r: RunState, data: Trajectory[]): Promise<LoadedModel> {
  const t = await trainablePolicy(r, MTDPO_PHASE);
  const reference = await startingPolicy(r, 'ref');
  const examples = await preparePolicyExamples(reference, data, r.cfg.train.truncation);
  reference.model.dispose();
  const pairs = trajectoryPairs(data, examples, r.cfg.train.maxPairsPerTask);
  r.say(`${MTDPO_PHASE}: ${pairs.length} trajectory pairs from ${data.length} sessions`);
  const phase = mtdpoPhase(t.m, pairs, r.cfg.train, await policyAnchor(r, t.m));
  await runUpdates(r, phase, !!r.cfg.train.lora, t.resume);
  phase.dispose();
  return t.m;
}

/**
 * SWEET-RL, phase 1: the critic (sees the reference) learns turn advantages with Bradley-Terry. In a LoRA run
 * the critic trains adapters too (same rank, alpha and targets), and its checkpoints and result are adapters over
 * the base; a run that continues an adapter still gives its critic fresh adapters over the bare base.
 */
async function trainCritic(r: RunState, data: Trajectory[]): Promise<string> {
  const base = r.cfg.fromCheckpoint;
  const criticDir = join(r.dir, 'critic');
  if (r.progress.done.includes(CRITIC_PHASE)) return criticDir;
  const resume = r.progress.current?.phase === CRITIC_PHASE ? r.progress.current : undefined;
  const lora = r.cfg.train.lora ? { ...r.cfg.train.lora, seed: r.cfg.train.seed } : null;
  const critic = await Critic.load(base, resume ? resume.dir : base, { lora });
  try {
    const examples = await critic.prepare(data, r.cfg.train.truncation);
    const pairs = criticPairs(data, examples, r.cfg.train.maxPairsPerTask, await snapshotPreferences(r, data));
    const people = pairs.filter((p) => p.from === 'people').length;
    r.say(`${CRITIC_PHASE}: ${pairs.length} trajectory pairs from ${data.length} sessions${people ? ` (${people} from people's preferences)` : ''}${critic.lora ? ' (LoRA)' : ''}`);
    // Which pairs the critic trained on, by session, for whoever audits the run.
    await writeFileAtomic(join(r.dir, 'critic-pairs.json'), JSON.stringify(pairs.map((p) => ({ chosen: p.chosen.sessionId, rejected: p.rejected.sessionId, from: p.from })), null, 2) + '\n');
    const phase = criticPhase(critic, pairs, r.cfg.train);
    await runUpdates(r, phase, critic.lora, resume ? { step: resume.step, dir: resume.dir } : undefined);
    phase.dispose();
    // Each agent turn's advantage under the trained critic, for the dashboard's session page.
    const stored = await saveSessionAdvantages(r.ctx.prisma, r.runId, await critic.turnAdvantages(examples));
    r.say(`${CRITIC_PHASE}: advantages stored for ${stored.turns} agent turns${stored.skipped ? ` (${stored.skipped} sessions skipped: more turns scored than stored)` : ''}`);
    await rm(criticDir, { recursive: true, force: true });
    if (critic.lora) await saveLora(criticDir, critic.model);
    else await saveCheckpoint(criticDir, critic.model);
    await copyTokenizerFiles(base, criticDir);
  } finally {
    critic.dispose();
  }
  await finishPhase(r, CRITIC_PHASE);
  return criticDir;
}

/**
 * SWEET-RL, phase 2: for a fraction of the turn states, candidates sampled from the policy and ranked by the
 * critic, paired top half against bottom half. One line a state in actor-pairs.jsonl: states collected before a
 * kill are kept, a line cut by the kill is dropped.
 */
async function collectCandidates(r: RunState, data: Trajectory[], criticDir: string): Promise<string> {
  const { cfg } = r;
  const pairsFile = join(r.dir, 'actor-pairs.jsonl');
  if (r.progress.done.includes(COLLECT_PHASE)) return pairsFile;
  const critic = await Critic.load(cfg.fromCheckpoint, criticDir);
  const sampler = await startingPolicy(r, 'sampler');
  try {
    const states = selectStates(data, cfg.train.stateFraction, cfg.train.seed, cfg.train.actorStates);
    let collected = 0;
    if (existsSync(pairsFile)) {
      const text = await readFile(pairsFile, 'utf8');
      const complete = text.lastIndexOf('\n') + 1;
      if (complete < text.length) await truncate(pairsFile, Buffer.byteLength(text.slice(0, complete)));
      collected = text.slice(0, complete).split('\n').filter(Boolean).length;
    }
    r.say(`actor: sampling ${cfg.train.candidates} candidates for ${states.length} turn states (${collected} already done)`);
    for (let k = collected; k < states.length; k++) {
      const pairs = await pairsForState(sampler, critic, states[k]!, cfg.train, (cfg.train.seed * 7919 + k) >>> 0);
      await appendFile(pairsFile, JSON.stringify({ state: k, pairs }) + '\n');
      r.progress.collected = k + 1;
      if ((k + 1) % 5 === 0 || k + 1 === states.length) {
        await saveProgress(r);
        if (r.ctx.progress !== 'none') r.say(`actor: ${k + 1}/${states.length} states sampled`);
      }
    }
  } finally {
    critic.dispose();
    sampler.model.dispose();
  }
  await finishPhase(r, COLLECT_PHASE);
  return pairsFile;
}

/** SWEET-RL, phase 3: the actor, DPO (+ NLL) on the critic-ranked candidate pairs. */
async function trainActor(r: RunState, pairsFile: string): Promise<LoadedModel> {
  const sampled = await readActorPairs(pairsFile);
  const pairs = widestGaps(sampled, criticGap, r.cfg.train.pairGapQuantile);
  r.say(`actor: ${pairs.length} candidate pairs${pairs.length < sampled.length ? ` (of ${sampled.length}: the critic's widest gaps)` : ''}`);
  const t = await trainablePolicy(r, ACTOR_PHASE);
  const phase = actorPhase(t.m, pairs, r.cfg.train, await policyAnchor(r, t.m));
  await runUpdates(r, phase, !!r.cfg.train.lora, t.resume);
  phase.dispose();
  return t.m;
}

/**
 * Publishes the trained policy as a candidate version. A LoRA run on an endpoint version's base model publishes
 * the adapter itself (PEFT layout), served on that endpoint (kind 'adapter'); otherwise the adapters are merged
 * and a full checkpoint is written. progress.current still names the last checkpoint until the version exists,
 * so a kill from here on resumes straight to publishing (zero updates left) rather than retraining.
 */
async function publish(r: RunState, policy: LoadedModel, sessions: number): Promise<PolicyVersion> {
  const { ctx, cfg, runId, metrics } = r;
  const name = `${cfg.algorithm}-${runId.slice(0, 8)}`;
  const out = resolve(join(ctx.checkpointRoot, 'policies', name));
  await rm(out, { recursive: true, force: true });
  const asAdapter = !!cfg.train.lora && !!cfg.servedBy;
  if (asAdapter) {
    await saveLora(out, policy.model, cfg.fromCheckpoint);
  } else {
    if (cfg.train.lora) mergeLora(policy.model);
    await saveCheckpoint(out, policy.model);
    await copyTokenizerFiles(cfg.fromCheckpoint, out);
  }
  const sha = await checkpointSha256(out);
  const kind = asAdapter ? 'adapter' : 'checkpoint';
  const version = await publishRun(ctx.prisma, runId, metrics as Prisma.InputJsonObject, {
    name,
    parentId: cfg.fromVersionId,
    algorithm: cfg.algorithm,
    kind,
    checkpointPath: out,
    checkpointSha256: sha,
    metrics: { training: metrics, sessions } as Prisma.InputJsonObject,
    // The adapter refers to its endpoint version (whose address it follows); its server name is versioned.
    ...(asAdapter ? { serving: adapterServing(cfg.servedBy!.endpointVersionId) } : {}),
    audit: { actor: 'trainer', action: 'policy.publish', detail: { runId, sha256: sha, parent: cfg.fromVersionName, kind } },
  });
  r.say(`published candidate ${name}${asAdapter ? ' (LoRA adapter)' : ''} (sha256 ${sha.slice(0, 12)})`);
  await saveProgress(r);
  await rm(join(r.dir, 'ckpt'), { recursive: true, force: true });
  return version;
}

/** Lists the checkpoint directories a run holds (for tests). */
export async function runCheckpoints(dir: string): Promise<string[]> {
  return existsSync(join(dir, 'ckpt')) ? (await readdir(join(dir, 'ckpt'))).sort() : [];
}
