// A/B experiments with real people, at the database level: starting one (the deployed version is the control),
// reading the running one, the sessions each arm played, and stopping it with promote (the candidate is deployed
// through policy-store's switchDeployedPolicy, the one deploy there is) or discard. At most one experiment runs at
// a time; every start and stop is audited. The arm choice itself is bot/experiments.ts.
import type { Database } from './db.ts';
import type { Experiment, PolicyVersion, Prisma, PrismaClient } from './generated/client.ts';
import { deployedPolicy, switchDeployedPolicy } from './policy-store.ts';

export type Arm = 'control' | 'candidate';
export type ExperimentOutcome = 'promote' | 'discard';

/** An experiment action that cannot be done; the message is meant for the moderator who asked. */
export class ExperimentError extends Error {
  override name = 'ExperimentError';
}

export type RunningExperiment = Experiment & { candidate: PolicyVersion; control: PolicyVersion };

/** Arbitrary, fixed: serialises experiment starts (two moderators at once still get one experiment). */
const EXPERIMENT_LOCK_KEY = 0x5377_4142; // "SwAB"

export async function runningExperiment(prisma: PrismaClient | Prisma.TransactionClient): Promise<RunningExperiment | null> {
  return prisma.experiment.findFirst({ where: { status: 'running' }, include: { candidate: true, control: true }, orderBy: { startedAt: 'desc' } });
}

/** Starts an experiment of `candidate` against the deployed version, `share` (0..1) of new sessions on the candidate. */
export async function startExperiment(db: Database, actor: string, o: { candidate: string; share: number; seed: number }): Promise<RunningExperiment> {
  if (!(o.share > 0 && o.share < 1)) throw new ExperimentError(`The candidate's share must be between 0 and 100 percent, exclusive (got ${Math.round(o.share * 100)}).`);
  if (!Number.isInteger(o.seed)) throw new ExperimentError(`The seed must be an integer, got ${o.seed}.`);
  return db.prisma.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${EXPERIMENT_LOCK_KEY})`;
    const running = await tx.experiment.findFirst({ where: { status: 'running' }, include: { candidate: true } });
    if (running) throw new ExperimentError(`An experiment is already running (candidate ${running.candidate.name}). Stop it first with /mod experiment stop.`);
    const candidate = await tx.policyVersion.findUnique({ where: { name: o.candidate } });
    if (!candidate) {
      const known = await tx.policyVersion.findMany({ where: { status: 'candidate' }, select: { name: true }, orderBy: { createdAt: 'desc' }, take: 10 });
      throw new ExperimentError(`No policy version named "${o.candidate}". Candidates: ${known.map((k) => k.name).join(', ') || 'none'}.`);
    }
    if (candidate.status === 'removed') throw new ExperimentError(`"${candidate.name}" was removed (sweetloop policy remove): it cannot be a candidate.`);
    const control = await deployedPolicy(tx as unknown as PrismaClient);
    if (!control) throw new ExperimentError('No version is deployed: an experiment compares a candidate with the deployed version.');
    if (control.id === candidate.id) throw new ExperimentError(`"${candidate.name}" is the deployed version already.`);
    const e = await tx.experiment.create({
      data: { candidateId: candidate.id, controlId: control.id, share: o.share, seed: o.seed, startedBy: actor },
      include: { candidate: true, control: true },
    });
    await tx.auditLog.create({ data: { actor, action: 'experiment.start', target: candidate.name, detail: { experimentId: e.id, control: control.name, share: o.share, seed: o.seed } } });
    return e;
  });
}

/**
 * Stops the running experiment. `promote` deploys the candidate first (a failed deploy leaves the experiment
 * running, so the stop can be tried again); `discard` leaves the deployed version as it is.
 */
export async function stopExperiment(db: Database, actor: string, outcome: ExperimentOutcome, detail: Record<string, unknown> = {}): Promise<{ experiment: RunningExperiment; deployed: PolicyVersion | null }> {
  if (outcome !== 'promote' && outcome !== 'discard') throw new ExperimentError(`The outcome is promote or discard, got "${outcome}".`);
  const e = await runningExperiment(db.prisma);
  if (!e) throw new ExperimentError('No experiment is running.');
  let deployed: PolicyVersion | null = null;
  if (outcome === 'promote') {
    const current = await db.prisma.policyVersion.findUniqueOrThrow({ where: { id: e.candidateId } });
    deployed = current.status === 'deployed' ? current : await switchDeployedPolicy(db, actor, current, 'experiment.promote', { detail: { experimentId: e.id }, notify: 'best-effort' });
  }
  const stopped = await db.prisma.$transaction(async (tx) => {
    const s = await tx.experiment.update({
      where: { id: e.id },
      data: { status: 'stopped', outcome, stoppedBy: actor, stoppedAt: new Date() },
      include: { candidate: true, control: true },
    });
    await tx.auditLog.create({ data: { actor, action: 'experiment.stop', target: e.candidate.name, detail: { experimentId: e.id, outcome, ...detail } as never } });
    return s;
  });
  return { experiment: stopped, deployed };
}

/** How many sessions of the experiment were played on this task: the position of the next one in its stratum. */
export async function sessionsInStratum(prisma: PrismaClient | Prisma.TransactionClient, experimentId: string, taskId: string): Promise<number> {
  return prisma.session.count({ where: { experimentId, taskId } });
}

export interface ArmSession {
  arm: Arm;
  kind: 'backend' | 'frontend';
  status: 'active' | 'answered' | 'abandoned' | 'expired';
  endReason: string | null;
  turnCount: number;
  evaluation: { score: number; success: boolean } | null;
  /** Mean rating, or null. */
  rating: number | null;
}

/** The sessions played in an experiment (the latest when no id is given), with what the comparison needs. */
export async function experimentSessions(prisma: PrismaClient, experimentId: string): Promise<ArmSession[]> {
  const rows = await prisma.session.findMany({
    where: { experimentId },
    select: {
      arm: true,
      status: true,
      endReason: true,
      turnCount: true,
      task: { select: { kind: true } },
      evaluation: { select: { score: true, success: true } },
      ratings: { select: { value: true } },
    },
  });
  return rows.map((r) => ({
    arm: r.arm === 'candidate' ? 'candidate' : 'control',
    kind: r.task.kind,
    status: r.status,
    endReason: r.endReason,
    turnCount: r.turnCount,
    evaluation: r.evaluation,
    rating: r.ratings.length ? r.ratings.reduce((a, x) => a + x.value, 0) / r.ratings.length : null,
  }));
}

/** The experiment to report on: the running one, else the latest one stopped; null when there was none. */
export async function latestExperiment(prisma: PrismaClient): Promise<RunningExperiment | null> {
  return (await runningExperiment(prisma)) ?? prisma.experiment.findFirst({ include: { candidate: true, control: true }, orderBy: { startedAt: 'desc' } });
}

/** All experiments, newest first (for the report). */
export async function allExperiments(prisma: PrismaClient): Promise<RunningExperiment[]> {
  return prisma.experiment.findMany({ include: { candidate: true, control: true }, orderBy: { startedAt: 'desc' } });
}
