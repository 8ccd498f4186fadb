// The only writer of TrainingRun and TrainingStep: a run's record from creation (config, data snapshot) through
// its progress and per-update metrics to its end, failed or published. The run itself is executed by
// trainer/runs.ts; the version it publishes is registered through policy-store.ts in the same transaction that
// marks the run succeeded, so no run is "succeeded" without its version or the other way round.
import { randomUUID } from 'node:crypto';
import type { PolicyVersion, Prisma, PrismaClient, TrainingRun } from './generated/client.ts';
import { registerVersion, type VersionRegistration } from './policy-store.ts';

export interface NewTrainingRun {
  algorithm: string;
  config: Prisma.InputJsonObject;
  dataSnapshot: Prisma.InputJsonObject;
}

/** Creates a queued run; `checkpointDirFor` names its directory from its id. */
export async function createTrainingRun(
  prisma: PrismaClient,
  run: NewTrainingRun,
  checkpointDirFor: (id: string) => string,
): Promise<TrainingRun> {
  const id = randomUUID();
  return prisma.trainingRun.create({ data: { id, ...run, status: 'queued', checkpointDir: checkpointDirFor(id) } });
}

/** Marks a run running (again, when resumed), keeping when it first started. */
export async function markRunRunning(prisma: PrismaClient, run: Pick<TrainingRun, 'id' | 'startedAt'>): Promise<void> {
  await prisma.trainingRun.update({
    where: { id: run.id },
    data: { status: 'running', startedAt: run.startedAt ?? new Date(), error: null },
  });
}

/** Stores where a run is (what resume reads), its heartbeat and log so far. */
export async function saveRunProgress(
  prisma: PrismaClient,
  runId: string,
  progress: Prisma.InputJsonObject,
  log: string,
): Promise<void> {
  await prisma.trainingRun.update({ where: { id: runId }, data: { progress, heartbeatAt: new Date(), log } });
}

/** One update's metrics; an update redone after a resume overwrites its row (same id and time). */
export async function recordTrainingStep(
  prisma: PrismaClient,
  runId: string,
  phase: string,
  step: number,
  metrics: Record<string, number>,
): Promise<void> {
  await prisma.trainingStep.upsert({
    where: { runId_phase_step: { runId, phase, step } },
    create: { runId, phase, step, metrics },
    update: { metrics },
  });
}

/** A run's metrics so far (checks made between phases), kept if the run is killed and resumed; publishRun writes the final ones. */
export async function saveRunMetrics(
  prisma: PrismaClient,
  runId: string,
  metrics: Prisma.InputJsonObject,
): Promise<void> {
  await prisma.trainingRun.update({ where: { id: runId }, data: { metrics } });
}

export async function markRunFailed(prisma: PrismaClient, runId: string, error: string, log: string): Promise<void> {
  await prisma.trainingRun.update({
    where: { id: runId },
    data: { status: 'failed', error, finishedAt: new Date(), log },
  });
}

/** Registers the run's candidate version and marks the run succeeded with its metrics, in one transaction. */
export async function publishRun(
  prisma: PrismaClient,
  runId: string,
  metrics: Prisma.InputJsonObject,
  version: VersionRegistration,
): Promise<PolicyVersion> {
  return registerVersion(prisma, { ...version, trainingRunId: runId }, async (tx) => {
    await tx.trainingRun.update({
      where: { id: runId },
      data: { status: 'succeeded', finishedAt: new Date(), metrics },
    });
  });
}
