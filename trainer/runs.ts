// Training runs: `sweetloop train --algo sweet|mtdpo|rft`. A run is recorded in TrainingRun (config, data
// snapshot = session ids and rewards, status, per-update TrainingStep metrics, log) and executed as phases
// (sweet: critic -> candidate collection -> actor; mtdpo: mtdpo; rft: sft). Every `checkpointEvery` updates the
// phase's weights and optimizer state go into a fresh directory, and only then does progress.json (phase,
// step, RNG state) point at it, so a run killed at any moment resumes from a consistent state and, since batch
// order and sampling are pure functions of (seed, phase, step), ends with the same weights as an uninterrupted
// run. The run ends by publishing a candidate PolicyVersion (checkpoint + sha256, parent, algorithm, metrics).
import { existsSync } from 'node:fs';
import { appendFile, mkdir, readFile, readdir, rm, truncate } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import cliProgress from 'cli-progress';
import type { PrismaClient, Prisma, TrainingRun, PolicyVersion } from '../prisma/generated/client.ts';
import type { TaskKind } from '../tasks/model.ts';
import { actorPhase, pairsForState, selectStates, type ActionPair } from './actor.ts';
import { Critic, criticPairs, criticPhase } from './critic.ts';
import { loadTrajectories, type Trajectory } from './data.ts';
import { checkpointSha256, loadOptimizer, saveCheckpoint, saveOptimizer } from './model/checkpoint.ts';
import { addLora, loadLora, mergeLora, saveLora } from './model/lora.ts';
import { writeFileAtomic } from './model/safetensors.ts';
import { mtdpoPhase, preparePolicyExamples, trajectoryPairs } from './mtdpo.ts';
import type { PresetName, TrainConfig } from './presets.ts';
import { sftPhase } from './rft.ts';
import type { Phase } from './schedule.ts';
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
  includeSimulated: boolean;
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

/** Creates a run: its config and data snapshot. Fails with a clear message when there is nothing to learn from. */
export async function createRun(ctx: RunContext, cfg: RunConfig): Promise<TrainingRun> {
  const data = await loadTrajectories(ctx.prisma, { ratingWeight: cfg.ratingWeight, includeSimulated: cfg.includeSimulated, kind: cfg.kind, split: 'train' });
  if (data.length < 2) throw new Error(`only ${data.length} usable ${cfg.kind} training session(s): collect more first (sweetloop simulate ...)`);
  const run = await ctx.prisma.trainingRun.create({
    data: {
      algorithm: cfg.algorithm,
      config: cfg as unknown as Prisma.InputJsonObject,
      dataSnapshot: { sessions: data.map((t) => ({ id: t.sessionId, reward: t.reward })) },
      status: 'queued',
    },
  });
  const dir = resolve(join(ctx.checkpointRoot, 'runs', run.id));
  return ctx.prisma.trainingRun.update({ where: { id: run.id }, data: { checkpointDir: dir } });
}

/** The unfinished runs (queued, running, or failed by a kill), oldest first. */
export async function unfinishedRuns(prisma: PrismaClient): Promise<TrainingRun[]> {
  return prisma.trainingRun.findMany({ where: { status: { in: ['queued', 'running'] } }, orderBy: { createdAt: 'asc' } });
}

/** Executes (or resumes) a run to its end and returns the candidate version it published. */
export async function executeRun(ctx: RunContext, runId: string): Promise<PolicyVersion> {
  const run = await ctx.prisma.trainingRun.findUnique({ where: { id: runId }, include: { policyVersions: true } });
  if (!run) throw new Error(`no training run ${runId}`);
  if (run.status === 'succeeded' && run.policyVersions[0]) return run.policyVersions[0];
  if (run.status === 'cancelled') throw new Error(`training run ${runId} was cancelled`);
  const cfg = run.config as unknown as RunConfig;
  const dir = run.checkpointDir!;
  await mkdir(dir, { recursive: true });
  const logLines: string[] = run.log ? run.log.split('\n').filter(Boolean) : [];
  const say = (line: string) => {
    logLines.push(`${new Date().toISOString()} ${line}`);
    ctx.log?.(line);
  };
  let progress: Progress = existsSync(join(dir, 'progress.json'))
    ? JSON.parse(await readFile(join(dir, 'progress.json'), 'utf8'))
    : { done: [], rng: { algorithm: 'mulberry32', seed: cfg.train.seed } };
  const saveProgress = async () => {
    await writeFileAtomic(join(dir, 'progress.json'), JSON.stringify(progress, null, 2) + '\n');
    await ctx.prisma.trainingRun.update({ where: { id: runId }, data: { progress: progress as unknown as Prisma.InputJsonObject, heartbeatAt: new Date(), log: logLines.join('\n') } });
  };
  await ctx.prisma.trainingRun.update({ where: { id: runId }, data: { status: 'running', startedAt: run.startedAt ?? new Date(), error: null } });
  say(progress.done.length || progress.current || progress.collected ? `resuming run ${runId} (${JSON.stringify({ done: progress.done, current: progress.current, collected: progress.collected })})` : `starting run ${runId}: ${cfg.algorithm} from ${cfg.fromVersionName}`);

  // The snapshot fixes the data; a session deleted or flagged since is not used (and the log says so).
  const snapshot = (run.dataSnapshot as { sessions: { id: string; reward: number }[] }).sessions;
  const rewards = new Map(snapshot.map((s) => [s.id, s.reward]));
  const loaded = await loadTrajectories(ctx.prisma, { ratingWeight: cfg.ratingWeight, includeSimulated: cfg.includeSimulated, sessionIds: snapshot.map((s) => s.id) });
  if (loaded.length < snapshot.length) say(`${snapshot.length - loaded.length} session(s) of the snapshot are no longer usable (deleted, withdrawn or flagged): left out`);
  const data: Trajectory[] = loaded.map((t) => ({ ...t, reward: rewards.get(t.sessionId) ?? t.reward }));

  let stepsThisProcess = 0;
  const metrics: Record<string, Record<string, number>> = {};

  /** Runs a phase from its latest checkpoint to the end. */
  const runPhase = async (phase: Phase, lora: boolean, resumeFrom: { step: number; dir: string } | undefined) => {
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
        metrics[phase.name] = m;
        await ctx.prisma.trainingStep.upsert({
          where: { runId_phase_step: { runId, phase: phase.name, step: s } },
          create: { runId, phase: phase.name, step: s, metrics: m },
          update: { metrics: m },
        });
        bar?.update(s + 1, { loss: m.loss!.toFixed(4) });
        if (ctx.progress === 'lines' && ((s + 1) % Math.max(1, Math.round(phase.totalSteps / 10)) === 0 || s + 1 === phase.totalSteps)) {
          say(`${phase.name}: update ${s + 1}/${phase.totalSteps}, ${Object.entries(m).map(([k, v]) => `${k} ${Number(v.toPrecision(4))}`).join(', ')}`);
        }
        if ((s + 1) % cfg.train.checkpointEvery === 0 || s + 1 === phase.totalSteps) {
          const ck = join(dir, 'ckpt', `${phase.name}-${String(s + 1).padStart(6, '0')}`);
          await rm(ck, { recursive: true, force: true });
          if (lora) await saveLora(ck, phase.model);
          else await saveCheckpoint(ck, phase.model);
          await saveOptimizer(ck, phase.optimizer);
          await copyTokenizerFiles(cfg.fromCheckpoint, ck);
          const previous = progress.current?.phase === phase.name ? progress.current.dir : undefined;
          progress.current = { phase: phase.name, step: s + 1, dir: ck };
          await saveProgress();
          if (previous && previous !== ck) await rm(previous, { recursive: true, force: true });
        }
        stepsThisProcess++;
        if (ctx.stopAfterSteps !== undefined && stepsThisProcess >= ctx.stopAfterSteps) throw new RunInterrupted(`stopped after ${stepsThisProcess} updates`);
      }
    } finally {
      bar?.stop();
    }
  };

  /** Loads the policy (or critic) a phase trains: from its latest checkpoint when resuming it. */
  const trainable = async (name: string, baseDir: string, phaseName: string): Promise<{ m: LoadedModel; resume?: { step: number; dir: string } }> => {
    const resume = progress.current?.phase === phaseName ? progress.current : undefined;
    const lora = cfg.train.lora;
    const m = await loadModel(resume && !lora ? resume.dir : baseDir, `${name}-${runId.slice(0, 8)}-${Date.now()}`, true);
    if (lora) {
      if (resume) await loadLora(resume.dir, m.model);
      else addLora(m.model, { rank: lora.rank, alpha: lora.alpha, seed: cfg.train.seed });
    }
    // Tokenizer files travel with the base, whatever directory the weights came from.
    return { m: { ...m, dir: baseDir }, ...(resume ? { resume: { step: resume.step, dir: resume.dir } } : {}) };
  };

  const finishPhase = async (name: string) => {
    progress.done.push(name);
    delete progress.current;
    await saveProgress();
  };

  let policy: LoadedModel | null = null;
  try {
    const base = cfg.fromCheckpoint;
    if (cfg.algorithm === 'rft') {
      const t = await trainable('policy', base, 'sft');
      policy = t.m;
      const phase = sftPhase(policy, data, cfg.train);
      await runPhase(phase, !!cfg.train.lora, t.resume);
      phase.dispose();
    } else if (cfg.algorithm === 'mtdpo') {
      const t = await trainable('policy', base, 'mtdpo');
      policy = t.m;
      const reference = await loadModel(base, `ref-${runId.slice(0, 8)}-${Date.now()}`, false);
      const examples = await preparePolicyExamples(reference, data);
      reference.model.dispose();
      const pairs = trajectoryPairs(data, examples, cfg.train.maxPairsPerTask);
      say(`mtdpo: ${pairs.length} trajectory pairs from ${data.length} sessions`);
      const phase = mtdpoPhase(policy, pairs, cfg.train);
      await runPhase(phase, !!cfg.train.lora, t.resume);
      phase.dispose();
    } else {
      const criticDir = join(dir, 'critic');
      if (!progress.done.includes('critic')) {
        const resume = progress.current?.phase === 'critic' ? progress.current : undefined;
        const critic = await Critic.load(base, resume ? resume.dir : base);
        try {
          const examples = await critic.prepare(data);
          const pairs = criticPairs(data, examples, cfg.train.maxPairsPerTask);
          say(`critic: ${pairs.length} trajectory pairs from ${data.length} sessions`);
          const phase = criticPhase(critic, pairs, { ...cfg.train, lora: null });
          await runPhase(phase, false, resume ? { step: resume.step, dir: resume.dir } : undefined);
          phase.dispose();
          await rm(criticDir, { recursive: true, force: true });
          await saveCheckpoint(criticDir, critic.model);
          await copyTokenizerFiles(base, criticDir);
        } finally {
          critic.dispose();
        }
        await finishPhase('critic');
      }
      const pairsFile = join(dir, 'actor-pairs.jsonl');
      if (!progress.done.includes('collect')) {
        const critic = await Critic.load(base, criticDir);
        const sampler = await loadModel(base, `sampler-${runId.slice(0, 8)}-${Date.now()}`, false);
        try {
          const states = selectStates(data, cfg.train.stateFraction, cfg.train.seed);
          // Lines of states collected before a kill are kept; a line cut by the kill is dropped.
          let collected = 0;
          if (existsSync(pairsFile)) {
            const text = await readFile(pairsFile, 'utf8');
            const complete = text.lastIndexOf('\n') + 1;
            if (complete < text.length) await truncate(pairsFile, Buffer.byteLength(text.slice(0, complete)));
            collected = text.slice(0, complete).split('\n').filter(Boolean).length;
          }
          say(`actor: sampling ${cfg.train.candidates} candidates for ${states.length} turn states (${collected} already done)`);
          for (let k = collected; k < states.length; k++) {
            const pairs = await pairsForState(sampler, critic, states[k]!, cfg.train, (cfg.train.seed * 7919 + k) >>> 0);
            await appendFile(pairsFile, JSON.stringify({ state: k, pairs }) + '\n');
            progress.collected = k + 1;
            if ((k + 1) % 5 === 0 || k + 1 === states.length) {
              await saveProgress();
              if (ctx.progress !== 'none') say(`actor: ${k + 1}/${states.length} states sampled`);
            }
          }
        } finally {
          critic.dispose();
          sampler.model.dispose();
        }
        await finishPhase('collect');
      }
      const lines = (await readFile(pairsFile, 'utf8')).split('\n').filter(Boolean);
      const pairs: ActionPair[] = lines.flatMap((l) => (JSON.parse(l) as { pairs: ActionPair[] }).pairs);
      say(`actor: ${pairs.length} candidate pairs`);
      const t = await trainable('policy', base, 'actor');
      policy = t.m;
      const phase = actorPhase(policy, pairs, cfg.train);
      await runPhase(phase, !!cfg.train.lora, t.resume);
      phase.dispose();
    }
    // Publish. progress.current still names the last checkpoint, so a kill from here on resumes straight to
    // publishing (zero updates left) rather than retraining.
    if (cfg.train.lora) mergeLora(policy.model);
    const name = `${cfg.algorithm}-${runId.slice(0, 8)}`;
    const out = resolve(join(ctx.checkpointRoot, 'policies', name));
    await rm(out, { recursive: true, force: true });
    await saveCheckpoint(out, policy.model);
    await copyTokenizerFiles(base, out);
    const sha = await checkpointSha256(out);
    const version = await ctx.prisma.$transaction(async (tx) => {
      const v = await tx.policyVersion.create({
        data: {
          name,
          parentId: cfg.fromVersionId,
          algorithm: cfg.algorithm,
          checkpointPath: out,
          checkpointSha256: sha,
          status: 'candidate',
          trainingRunId: runId,
          metrics: { training: metrics, sessions: data.length } as Prisma.InputJsonObject,
        },
      });
      await tx.trainingRun.update({ where: { id: runId }, data: { status: 'succeeded', finishedAt: new Date(), metrics: metrics as Prisma.InputJsonObject } });
      await tx.auditLog.create({ data: { actor: 'trainer', action: 'policy.publish', target: name, detail: { runId, sha256: sha, parent: cfg.fromVersionName } } });
      return v;
    });
    say(`published candidate ${name} (sha256 ${sha.slice(0, 12)})`);
    await saveProgress();
    await rm(join(dir, 'ckpt'), { recursive: true, force: true });
    return version;
  } catch (err) {
    // A stand-in kill leaves the run as a kill would: running, resumable. A real error marks it failed.
    if (!(err instanceof RunInterrupted)) {
      say(`failed: ${(err as Error).message}`);
      await ctx.prisma.trainingRun.update({ where: { id: runId }, data: { status: 'failed', error: (err as Error).message, finishedAt: new Date(), log: logLines.join('\n') } });
    }
    throw err;
  } finally {
    policy?.model.dispose();
  }
}

/** Lists the checkpoint directories a run holds (for tests and `sweetloop train --status`). */
export async function runCheckpoints(dir: string): Promise<string[]> {
  return existsSync(join(dir, 'ckpt')) ? (await readdir(join(dir, 'ckpt'))).sort() : [];
}
