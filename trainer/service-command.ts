// `sweetloop trainer`: the trainer service's command action over the loop of trainer/service.ts. The runs it starts
// and the promotion gate it puts them through are commands.ts's, the same as `sweetloop train --promote`.
import { deployedPolicy } from '../prisma/policy-store.ts';
import { trainingSource } from './training-source.ts';
import { DEFAULT_LORA_TARGETS } from './model/lora-modules.ts';
import type { Database } from '../prisma/db.ts';
import type { PolicyVersion } from '../prisma/generated/client.ts';
import type { TaskKind } from '../tasks/model.ts';
import { PRESETS } from './presets.ts';
import { unfinishedRuns, type Algorithm } from './runs.ts';
import type { TrainerSettings } from './settings.ts';
import { trainingStudy, usableSessions } from './data.ts';
import { runService, type ServiceStatus } from './service.ts';
import { createRunFrom, dataFilterFor, gate, presetOf, trainCommand, type TrainCommandOptions } from './commands.ts';

export interface ServiceCommandOptions {
  algo: Algorithm;
  /** Preset of runs from an own checkpoint. */
  preset: string;
  /** Preset of LoRA runs on a served base (default paper-lora); its LoRA rank gives way to TRAINER_LORA_RANK. */
  loraPreset?: string;
  kind: TaskKind;
  evalEpisodes?: number;
  /** Cap each phase (a smoke run; tests). */
  maxSteps?: number;
}

/**
 * The trainer service. `status` is shared with its health server; `signal` stops it (default: SIGINT / SIGTERM).
 * From an own checkpoint a run uses `preset` (full fine-tuning unless the preset has LoRA); from a version served
 * by an endpoint, `loraPreset` with a fresh adapter of TRAINER_LORA_RANK (alpha 2 x rank) or the deployed adapter
 * continued; from a version trained on erased data, its nearest clean ancestor (trainer/training-source.ts).
 */
export async function serviceCommand(
  db: Database,
  s: TrainerSettings,
  o: ServiceCommandOptions,
  run: { status?: ServiceStatus; signal?: AbortSignal } = {},
): Promise<void> {
  let signal = run.signal;
  if (!signal) {
    const controller = new AbortController();
    process.once('SIGINT', () => controller.abort());
    process.once('SIGTERM', () => controller.abort());
    signal = controller.signal;
  }
  const preset = presetOf(o.preset);
  const loraPreset = presetOf(o.loraPreset ?? 'paper-lora');
  const presetLora = PRESETS[loraPreset].lora;
  const servedLora = {
    rank: s.loraRank,
    alpha: 2 * s.loraRank,
    targetModules: [...(presetLora?.targetModules ?? DEFAULT_LORA_TARGETS)],
  };
  const data = dataFilterFor(s);
  // A misnamed or evaluation study stops the service at its start rather than at every poll.
  const study = data.study !== undefined ? await trainingStudy(db.prisma, data.study, o.kind) : null;
  const runOptions = (p: string): TrainCommandOptions => ({
    algo: o.algo,
    from: 'deployed',
    preset: p,
    kind: o.kind,
    ...(o.maxSteps !== undefined ? { maxSteps: o.maxSteps } : {}),
  });
  await runService({
    db,
    minNewSessions: s.minNewSessions,
    pollSeconds: s.pollSeconds,
    maxBackoffSeconds: s.maxBackoffSeconds,
    signal,
    ...(run.status ? { status: run.status } : {}),
    log: (l) => console.error(`trainer: ${l}`),
    countNewSessions: (after) =>
      db.prisma.session.count({
        where: usableSessions({
          source: data.source,
          ...(data.minQuality !== undefined ? { minQuality: data.minQuality } : {}),
          ...(data.minRating !== undefined ? { minRating: data.minRating } : {}),
          kind: o.kind,
          split: 'train',
          ...(study ? { studyId: study.id } : {}),
          ...(after ? { endedAfter: after } : {}),
        }),
      }),
    plan: async () => {
      const deployed = await deployedPolicy(db.prisma);
      // Served by an endpoint (the deployed version, or its clean ancestor): LoRA on its base, preset loraPreset.
      const served = await trainingSource(db.prisma, deployed, {
        onErased: 'ancestor',
        lora: servedLora,
        loraExplicit: false,
        defaultMaxLoraRank: s.maxLoraRank,
      });
      if (!served.ok) return served;
      if (served.endpointVersionId)
        return { ...served, summary: `${served.summary}, preset ${loraPreset}`, preset: loraPreset as string };
      // An own checkpoint: the preset's own settings.
      const own = await trainingSource(db.prisma, deployed, {
        onErased: 'ancestor',
        lora: PRESETS[preset].lora ?? null,
        loraExplicit: false,
        defaultMaxLoraRank: s.maxLoraRank,
      });
      return own.ok ? { ...own, summary: `${own.summary}, preset ${preset}`, preset: preset as string } : own;
    },
    cycle: async (plan) => {
      let version: PolicyVersion;
      if (!plan) {
        const [unfinished] = await unfinishedRuns(db.prisma);
        version = await trainCommand(db, s, { ...runOptions(o.preset), resume: unfinished!.id });
      } else {
        const runId = await createRunFrom(db, s, runOptions(plan.preset), plan, (l) => console.error(`trainer: ${l}`));
        version = await trainCommand(db, s, { ...runOptions(plan.preset), resume: runId });
      }
      await gate(db, s, version.name, o.kind, o.evalEpisodes);
    },
  });
}
