// What every phase of a training run (trainer/runs.ts) shares: the run's configuration and context, its progress
// (what a resume reads), and the machinery of a phase's updates: checkpoint every `checkpointEvery` updates into a
// fresh directory and only then point the run's progress at it, load a phase's policy from its latest checkpoint,
// and the rehearsal term of a policy phase.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { progressBar } from '../tasks/progress-bar.ts';
import type { PrismaClient, Prisma } from '../prisma/generated/client.ts';
import { recordTrainingStep, saveRunProgress } from '../prisma/run-store.ts';
import type { Serving } from './policies/serving.ts';
import type { TaskKind } from '../tasks/model.ts';
import type { PeoplePair } from './critic.ts';
import type { CandidateRanker } from './actor.ts';
import type { DataFilter } from './data.ts';
import { loadOptimizer, saveCheckpoint, saveOptimizer } from './model/checkpoint.ts';
import { addLora, loadLora, saveLora } from './model/lora.ts';
import { writeFileAtomic } from './model/safetensors.ts';
import type { PresetName, TrainConfig } from './presets.ts';
import { rehearsalAnchor, rehearsalSet } from './rehearsal.ts';
import type { Phase, PhaseAnchor } from './schedule.ts';
import { loadModel, type LoadedModel } from './sequences.ts';
import { copyTokenizerFiles } from './versions.ts';

export type Algorithm = 'sweet' | 'mtdpo' | 'rft';

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
  /**
   * A control of a benchmark (bench/credit/): SWEET-RL's actor ranks its candidates with this instead of a
   * learned critic, whose phase is then skipped; the run's log names it. Never set by the service or the CLI.
   */
  ranker?: { name: string; load(): Promise<CandidateRanker> };
  /** Testing aid standing in for a kill: stop (throwing RunInterrupted) once this many updates ran in this process. */
  stopAfterSteps?: number;
  /** Aborted when the person stops the command (trainer/interrupt.ts): the run stays resumable, not failed. */
  signal?: AbortSignal;
}

export class RunInterrupted extends Error {
  override name = 'RunInterrupted';
}

export interface Progress {
  /** Phases finished, in order. */
  done: string[];
  /** The latest checkpoint of the phase in progress. */
  current?: { phase: string; step: number; dir: string };
  /** Candidate states collected so far (sweet). */
  collected?: number;
  /** The algorithm's phases in order (runs started before this have none): the dashboard's progress bars. */
  phases?: string[];
  /** Each phase's total once it started: its updates, or the states to sample (collect). */
  totals?: Record<string, number>;
  /** The seed every random choice of the run derives from (with the phase and step). */
  rng: { algorithm: 'mulberry32'; seed: number };
}

/** A person's preference a run uses: the Preference row, and its sessions in chosen/rejected order. */
export interface SnapshotPreference extends PeoplePair {
  id: string;
}

/** What a run stores as TrainingRun.metrics: named groups of numbers (null where a number has no value). */
export type RunMetrics = Record<string, Record<string, number | null>>;

/** Everything a run's phases share: where it writes, what it has done so far, its log and metrics. */
export interface RunState {
  ctx: RunContext;
  runId: string;
  cfg: RunConfig;
  dir: string;
  progress: Progress;
  logLines: string[];
  /** Each phase's last update's metrics, and checks such as the critic against the tests (trainer/critic-tests.ts). */
  metrics: RunMetrics;
  stepsThisProcess: number;
  say(line: string): void;
}

export async function saveProgress(r: RunState): Promise<void> {
  await saveRunProgress(r.ctx.prisma, r.runId, r.progress as unknown as Prisma.InputJsonObject, r.logLines.join('\n'));
  await writeFileAtomic(join(r.dir, 'progress.json'), JSON.stringify(r.progress, null, 2) + '\n');
}

export async function finishPhase(r: RunState, name: string): Promise<void> {
  r.progress.done.push(name);
  delete r.progress.current;
  await saveProgress(r);
}

/** Runs a phase's updates from its latest checkpoint to the end, checkpointing every `checkpointEvery`. */
export async function runUpdates(
  r: RunState,
  phase: Phase,
  lora: boolean,
  resumeFrom: { step: number; dir: string } | undefined,
): Promise<void> {
  const { ctx, cfg, runId } = r;
  let start = 0;
  if (resumeFrom) {
    await loadOptimizer(resumeFrom.dir, phase.optimizer);
    start = resumeFrom.step;
  }
  const bar =
    ctx.progress === 'bar'
      ? progressBar(process.stderr, `${phase.name} [{bar}] {value}/{total} | loss {loss} | {left}`)
      : undefined;
  (r.progress.totals ??= {})[phase.name] = phase.totalSteps;
  bar?.start(phase.totalSteps, start, { loss: '-' });
  try {
    for (let s = start; s < phase.totalSteps; s++) {
      const m = await phase.step(s);
      if (!Number.isFinite(m.loss)) throw new Error(`${phase.name}: loss became ${m.loss} at update ${s}`);
      r.metrics[phase.name] = m;
      await recordTrainingStep(ctx.prisma, runId, phase.name, s, m);
      bar?.update(s + 1, { loss: m.loss!.toFixed(4) });
      if (
        ctx.progress === 'lines' &&
        ((s + 1) % Math.max(1, Math.round(phase.totalSteps / 10)) === 0 || s + 1 === phase.totalSteps)
      ) {
        r.say(
          `${phase.name}: update ${s + 1}/${phase.totalSteps}, ${Object.entries(m)
            .map(([k, v]) => `${k} ${Number(v.toPrecision(4))}`)
            .join(', ')}`,
        );
      }
      if ((s + 1) % cfg.train.checkpointEvery === 0 || s + 1 === phase.totalSteps)
        await checkpointPhase(r, phase, lora, s + 1);
      r.stepsThisProcess++;
      if (ctx.stopAfterSteps !== undefined && r.stepsThisProcess >= ctx.stopAfterSteps)
        throw new RunInterrupted(`stopped after ${r.stepsThisProcess} updates`);
    }
  } finally {
    bar?.stop();
  }
}

/** Writes the phase's weights and optimizer to a fresh directory, then points the run's progress at it. */
export async function checkpointPhase(r: RunState, phase: Phase, lora: boolean, step: number): Promise<void> {
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
export async function trainablePolicy(
  r: RunState,
  phaseName: string,
): Promise<{ m: LoadedModel; resume?: { step: number; dir: string } }> {
  const base = r.cfg.fromCheckpoint;
  const resume = r.progress.current?.phase === phaseName ? r.progress.current : undefined;
  const lora = r.cfg.train.lora;
  const m = await loadModel(resume && !lora ? resume.dir : base, `policy-${r.runId.slice(0, 8)}-${Date.now()}`, true);
  if (lora) {
    if (resume) await loadLora(resume.dir, m.model);
    else if (r.cfg.fromAdapter) await loadLora(r.cfg.fromAdapter, m.model);
    else
      addLora(m.model, {
        rank: lora.rank,
        alpha: lora.alpha,
        ...(lora.targetModules ? { targetModules: lora.targetModules } : {}),
        seed: r.cfg.train.seed,
      });
  }
  // Tokenizer files travel with the base, whatever directory the weights came from.
  return { m: { ...m, dir: base }, ...(resume ? { resume: { step: resume.step, dir: resume.dir } } : {}) };
}

/** The policy as the run found it, frozen (a sampler, a DPO reference): the base, with the adapter it continues. */
export async function startingPolicy(r: RunState, label: string): Promise<LoadedModel> {
  const m = await loadModel(r.cfg.fromCheckpoint, `${label}-${r.runId.slice(0, 8)}-${Date.now()}`, false);
  if (r.cfg.fromAdapter) await loadLora(r.cfg.fromAdapter, m.model);
  return m;
}

/** The rehearsal term of a policy phase (none when the configuration has no rehearsal). */
export async function policyAnchor(r: RunState, m: LoadedModel): Promise<PhaseAnchor | undefined> {
  const set = await rehearsalSet(m, r.cfg.train);
  if (set.length)
    r.say(
      `rehearsal: ${set.length} dialogues, ${r.cfg.train.rehearsal!.perUpdate} an update, weight ${r.cfg.train.rehearsal!.coefficient}`,
    );
  return rehearsalAnchor(m, set, r.cfg.train);
}
