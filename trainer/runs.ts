// Training runs: `sweetloop train --algo sweet|mtdpo|rft`. A run is recorded in TrainingRun (config, data
// snapshot = session ids and rewards, and the people's preferences its critic uses, status, per-update
// TrainingStep metrics, log; written by prisma/run-store.ts) and executed as named phases (PHASES below: sweet =
// critic -> collect -> actor in run-sweet.ts; mtdpo; rft; each phase's module exports its name; what they share,
// updates and checkpoints, is run-state.ts), then published; evaluation and
// promotion follow in trainer/commands.ts and trainer/service.ts. Every `checkpointEvery` updates the phase's weights
// and optimizer state go into a fresh directory, and only then does the run's progress (phase, step, RNG state:
// TrainingRun.progress, what a resume reads, copied to progress.json for whoever looks at the directory) point
// at it, so a run killed at any moment resumes from a consistent state and, since batch order and sampling are
// pure functions of (seed, phase, step), ends with the same weights as an uninterrupted run. The run ends by
// publishing a candidate PolicyVersion (checkpoint + sha256, parent, algorithm, metrics).
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Prisma, PrismaClient, TrainingRun, PolicyVersion } from '../prisma/generated/client.ts';
import { createTrainingRun, markRunFailed, markRunRunning, publishRun } from '../prisma/run-store.ts';
import { adapterServing } from './policies/serving.ts';
import { peoplePairs } from '../prisma/preference-store.ts';
import { DataSelectionError, loadTrajectories, selectTrainingData, type Trajectory } from './data.ts';
import { nothingToLearn } from './learnable.ts';
import { checkpointSha256, saveCheckpoint } from './model/checkpoint.ts';
import { mergeLora, saveLora } from './model/lora.ts';
import { MTDPO_PHASE, mtdpoPhase, preparePolicyExamples, trajectoryPairs } from './mtdpo.ts';
import { RFT_PHASE, rftPhase } from './rft.ts';
import { ACTOR_PHASE, COLLECT_PHASE } from './actor.ts';
import { CRITIC_PHASE } from './critic.ts';
import type { LoadedModel } from './sequences.ts';
import { describeFlagExclusions } from '../prisma/moderation-store.ts';
import { copyTokenizerFiles } from './versions.ts';
import {
  policyAnchor,
  RunInterrupted,
  runUpdates,
  saveProgress,
  startingPolicy,
  trainablePolicy,
  type Algorithm,
  type Progress,
  type RunConfig,
  type RunContext,
  type RunMetrics,
  type RunState,
  type SnapshotPreference,
} from './run-state.ts';
import { collectCandidates, trainActor, trainCritic } from './run-sweet.ts';

export { RunInterrupted, type Algorithm, type RunConfig } from './run-state.ts';

/**
 * Creates a run: its config and data snapshot. Fails with a clear message when there is too little data, and, with
 * `refuseUnlearnable` (the train command and the service), when the data gives the algorithm nothing to learn
 * from (trainer/learnable.ts); without it such a run fails in its first phase.
 */
export async function createRun(
  ctx: RunContext,
  cfg: RunConfig,
  o: { refuseUnlearnable?: boolean } = {},
): Promise<TrainingRun> {
  const {
    trajectories: data,
    counts,
    filter,
    flagged,
  } = await selectTrainingData(
    ctx.prisma,
    { ratingWeight: cfg.ratingWeight, kind: cfg.kind, split: 'train' },
    cfg.data,
  );
  const flags = describeFlagExclusions(flagged);
  if (flags) ctx.log?.(flags);
  // Only judgements between two sessions the run trains on: the critic scores nothing else.
  const preferences: SnapshotPreference[] | undefined =
    cfg.algorithm === 'sweet' && cfg.preferences
      ? (
          await peoplePairs(
            ctx.prisma,
            data.map((t) => t.sessionId),
          )
        ).map((p) => ({ id: p.id, chosen: p.chosen, rejected: p.rejected }))
      : undefined;
  // Refused here, before a run row, a checkpoint directory and a model load, with why and what would work.
  const nothing = o.refuseUnlearnable
    ? nothingToLearn(data, {
        algorithm: cfg.algorithm,
        kind: cfg.kind,
        rftThreshold: cfg.train.rftThreshold,
        preferencePairs: preferences?.length ?? 0,
      })
    : null;
  if (nothing) throw new DataSelectionError(nothing);
  return createTrainingRun(
    ctx.prisma,
    {
      algorithm: cfg.algorithm,
      config: cfg as unknown as Prisma.InputJsonObject,
      // Exactly which sessions (and people's preferences between them), and the filter that chose them.
      dataSnapshot: {
        filter,
        counts,
        sessions: data.map((t) => ({ id: t.sessionId, reward: t.reward, simulated: t.simulated })),
        ...(preferences ? { preferences } : {}),
      } as unknown as Prisma.InputJsonObject,
    },
    (id) => resolve(join(ctx.checkpointRoot, 'runs', id)),
  );
}

/** The unfinished runs (queued, running, or failed by a kill), oldest first. */
export async function unfinishedRuns(prisma: PrismaClient): Promise<TrainingRun[]> {
  return prisma.trainingRun.findMany({
    where: { status: { in: ['queued', 'running'] } },
    orderBy: { createdAt: 'asc' },
  });
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
    // A stand-in kill, or a person's Ctrl-C, leaves the run as a kill would: running, resumable. A real error marks
    // it failed.
    if (!(err instanceof RunInterrupted) && !ctx.signal?.aborted) {
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
    if (r.ctx.ranker)
      r.say(`${CRITIC_PHASE}: not trained; candidates ranked by ${r.ctx.ranker.name} (a benchmark's control)`);
    const criticDir = r.ctx.ranker ? null : await trainCritic(r, data);
    const pairsFile = await collectCandidates(r, data, criticDir);
    return trainActor(r, pairsFile);
  },
};

/** The phases of each algorithm, by name, in order (what the dashboard draws a progress bar for). */
export const PHASE_NAMES: Record<Algorithm, readonly string[]> = {
  rft: [RFT_PHASE],
  mtdpo: [MTDPO_PHASE],
  sweet: [CRITIC_PHASE, COLLECT_PHASE, ACTOR_PHASE],
};

/** Marks the run running and reads its progress from its row (a fresh run starts from nothing). */
async function openRun(ctx: RunContext, run: TrainingRun): Promise<RunState> {
  const cfg = run.config as unknown as RunConfig;
  const dir = run.checkpointDir!;
  await mkdir(dir, { recursive: true });
  const logLines: string[] = run.log ? run.log.split('\n').filter(Boolean) : [];
  const progress: Progress = (run.progress as unknown as Progress | null) ?? {
    done: [],
    rng: { algorithm: 'mulberry32', seed: cfg.train.seed },
  };
  const r: RunState = {
    ctx,
    runId: run.id,
    cfg,
    dir,
    progress,
    logLines,
    // Saved as the run goes (the critic's check), so a resumed run still publishes them.
    metrics: (run.metrics as RunMetrics | null) ?? {},
    stepsThisProcess: 0,
    say(line) {
      logLines.push(`${new Date().toISOString()} ${line}`);
      ctx.log?.(line);
    },
  };
  progress.phases = [...PHASE_NAMES[cfg.algorithm]];
  await markRunRunning(ctx.prisma, run);
  r.say(
    progress.done.length || progress.current || progress.collected
      ? `resuming run ${run.id} (${JSON.stringify({ done: progress.done, current: progress.current, collected: progress.collected })})`
      : `starting run ${run.id}: ${cfg.algorithm} from ${cfg.fromVersionName}`,
  );
  return r;
}

/** The snapshot fixes the data; a session deleted or flagged since is not used (and the log says so). */
async function snapshotData(r: RunState, run: TrainingRun): Promise<Trajectory[]> {
  const snapshot = (run.dataSnapshot as { sessions: { id: string; reward: number }[] }).sessions;
  const rewards = new Map(snapshot.map((s) => [s.id, s.reward]));
  const loaded = await loadTrajectories(r.ctx.prisma, {
    ratingWeight: r.cfg.ratingWeight,
    source: r.cfg.data.source,
    sessionIds: snapshot.map((s) => s.id),
  });
  if (loaded.length < snapshot.length)
    r.say(
      `${snapshot.length - loaded.length} session(s) of the snapshot are no longer usable (deleted, withdrawn or flagged): left out`,
    );
  return loaded.map((t) => ({ ...t, reward: rewards.get(t.sessionId) ?? t.reward }));
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
    audit: {
      actor: 'trainer',
      action: 'policy.publish',
      detail: { runId, sha256: sha, parent: cfg.fromVersionName, kind },
    },
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
