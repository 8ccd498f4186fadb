// A/B tests with real people, at the database level: a period in which a study's arms compare a candidate with
// its control. Starting one sets the study's arms (the control, what the study played until then, and the
// candidate with its share) and records the period (Experiment); bot/assign.ts then assigns every session by
// those arms, as it does for any study, and tags it with the period. Stopping it deploys the chosen version
// (promote, through deployment-store's switchDeployedPolicy, the one deploy there is) or drops it (discard), and
// sets the arms that play on. This store is the only writer of Experiment rows and of a study's arms after its
// creation; every start and stop is audited. At most one A/B runs in a study at a time.
import type { Database } from './db.ts';
import type { Experiment, PolicyVersion, Prisma, PrismaClient, Study } from './generated/client.ts';
import { audit } from './moderation-store.ts';
import { deployedPolicy, PolicyError, resolvePolicyName, trainedOnErasedData } from './policy-store.ts';
import { assertDeployable, switchDeployedPolicy, type ForceOptions } from './deployment-store.ts';
import { DEFAULT_STUDY, defaultStudy, findStudy, withStudyLock, type StudyWithArms } from './study-store.ts';

type Tx = Prisma.TransactionClient;
export type ExperimentOutcome = 'promote' | 'discard';

/** An A/B action that cannot be done; the message is meant for the moderator or operator who asked. */
export class ExperimentError extends Error {
  override name = 'ExperimentError';
}

export type RunningExperiment = Experiment & { candidate: PolicyVersion; control: PolicyVersion; study: Study };
const WITH_VERSIONS = { candidate: true, control: true, study: true } as const;

export async function runningExperiment(prisma: PrismaClient | Tx, studyId: string): Promise<RunningExperiment | null> {
  return prisma.experiment.findFirst({
    where: { studyId, status: 'running' },
    include: WITH_VERSIONS,
    orderBy: { startedAt: 'desc' },
  });
}

/** The study's running A/B, else its latest one stopped; null when it never had one. */
export async function latestExperiment(prisma: PrismaClient, studyId: string): Promise<RunningExperiment | null> {
  return (
    (await runningExperiment(prisma, studyId)) ??
    prisma.experiment.findFirst({ where: { studyId }, include: WITH_VERSIONS, orderBy: { startedAt: 'desc' } })
  );
}

/** Every A/B of every study, newest first (for the report). */
export async function allExperiments(prisma: PrismaClient): Promise<RunningExperiment[]> {
  return prisma.experiment.findMany({ include: WITH_VERSIONS, orderBy: { startedAt: 'desc' } });
}

/** The study by name; the default study is created on first use, like everywhere else. */
export async function armsStudy(prisma: PrismaClient, name: string): Promise<StudyWithArms> {
  const s = name === DEFAULT_STUDY ? await defaultStudy(prisma) : await findStudy(prisma, name);
  if (!s) throw new ExperimentError(`No study named "${name}".`);
  return s;
}

const armList = (s: StudyWithArms) => s.arms.map((a) => `${a.policyVersion.name} ${a.share}%`).join(', ');

/**
 * Starts an A/B in the study: its arms become the control (the study's single arm, or the deployed version where
 * it has none, as in the default study) at 100 - `share` percent and the candidate at `share` percent, and the
 * period is recorded and audited, all under the study's lock (no session is assigned half-way).
 */
export async function startExperiment(
  db: Database,
  actor: string,
  o: { study: string; candidate: string; share: number } & ForceOptions,
): Promise<RunningExperiment> {
  if (!(Number.isInteger(o.share) && o.share >= 1 && o.share <= 99))
    throw new ExperimentError(`The candidate's share is a whole percent from 1 to 99, got ${o.share}.`);
  const { id } = await armsStudy(db.prisma, o.study);
  return withStudyLock(db.prisma, id, async (tx) => {
    const study = (await findStudy(tx, o.study))!;
    if (study.status === 'closed') throw new ExperimentError(`Study "${study.name}" is closed.`);
    const running = await runningExperiment(tx, study.id);
    if (running)
      throw new ExperimentError(
        `An experiment is already running in study "${study.name}" (candidate ${running.candidate.name}). Stop it first with /mod experiment stop.`,
      );
    const candidate = await resolvePolicyName(tx, o.candidate).catch((err: unknown) => {
      throw err instanceof PolicyError ? new ExperimentError(err.message) : err;
    });
    if (candidate.status === 'removed')
      throw new ExperimentError(`"${candidate.name}" was removed (sweetloop policy remove): it cannot be a candidate.`);
    // An A/B puts the candidate in front of people: the same rule as a deploy (deployment-store.ts erasedDataBlocker).
    assertDeployable(candidate, o);
    if (study.arms.length > 1) {
      throw new ExperimentError(
        `Study "${study.name}" already splits its sessions between arms (${armList(study)}); end that first with \`sweetloop study arms stop ${study.name} --promote VERSION\` or \`--discard VERSION\`.`,
      );
    }
    const control = study.arms[0]?.policyVersion ?? (await deployedPolicy(tx as unknown as PrismaClient));
    if (!control)
      throw new ExperimentError(
        'No version is deployed: an experiment compares a candidate with the deployed version.',
      );
    if (control.id === candidate.id) {
      throw new ExperimentError(
        control.status === 'deployed'
          ? `"${candidate.name}" is the deployed version already.`
          : `"${candidate.name}" already plays study "${study.name}".`,
      );
    }
    await setArms(tx, study.id, [
      { policyVersionId: control.id, share: 100 - o.share },
      { policyVersionId: candidate.id, share: o.share },
    ]);
    const e = await tx.experiment.create({
      data: { studyId: study.id, candidateId: candidate.id, controlId: control.id, share: o.share, startedBy: actor },
      include: WITH_VERSIONS,
    });
    await audit(tx, actor, 'experiment.start', candidate.name, {
      experimentId: e.id,
      study: study.name,
      control: control.name,
      share: o.share,
      armsBefore: armList(study) || 'the deployed version',
    });
    if (trainedOnErasedData(candidate)) {
      await audit(tx, actor, 'policy.force-erased-data', candidate.name, {
        versionId: candidate.id,
        via: 'experiment.start',
        experimentId: e.id,
      });
    }
    return e;
  });
}

async function setArms(
  tx: Tx,
  studyId: string,
  arms: readonly { policyVersionId: string; share: number }[],
): Promise<void> {
  await tx.studyArm.deleteMany({ where: { studyId } });
  if (arms.length) await tx.studyArm.createMany({ data: arms.map((a) => ({ studyId, ...a })) });
}

/**
 * The arms left when `target` is promoted (it alone, at 100) or discarded (the others, their shares scaled back
 * to 100 by largest remainder). A study left with one arm where it had none of its own (the default study) gets
 * none again: the deployed version plays it, as before the A/B.
 */
export function armsAfter(
  study: Pick<StudyWithArms, 'name' | 'arms'>,
  targetId: string,
  outcome: ExperimentOutcome,
): { policyVersionId: string; share: number }[] {
  const kept =
    outcome === 'promote'
      ? study.arms.filter((a) => a.policyVersionId === targetId)
      : study.arms.filter((a) => a.policyVersionId !== targetId);
  if (study.name === DEFAULT_STUDY && kept.length <= 1) return [];
  const total = kept.reduce((n, a) => n + a.share, 0);
  const exact = kept.map((a) => ({
    policyVersionId: a.policyVersionId,
    name: a.policyVersion.name,
    share: (a.share * 100) / total,
  }));
  const out = exact.map((a) => ({ ...a, share: Math.floor(a.share) }));
  let left = 100 - out.reduce((n, a) => n + a.share, 0);
  const order = exact
    .map((a, i) => ({ i, frac: a.share - Math.floor(a.share), name: a.name }))
    .sort((x, y) => y.frac - x.frac || x.name.localeCompare(y.name));
  for (const { i } of order) if (left-- > 0) out[i]!.share++;
  return out.map(({ policyVersionId, share }) => ({ policyVersionId, share }));
}

export interface StopRequest extends ForceOptions {
  outcome: ExperimentOutcome;
  /** The arm promoted or discarded, by version name; default: the running A/B's candidate. */
  version?: string;
}

export interface StopResult {
  study: StudyWithArms;
  /** The A/B period stopped, when one was running. */
  experiment: RunningExperiment | null;
  /** The version promoted or discarded. */
  version: PolicyVersion;
  /** The version deployed by a promote. */
  deployed: PolicyVersion | null;
}

function stopTarget(study: StudyWithArms, e: RunningExperiment | null, version: string | undefined): PolicyVersion {
  if (version === undefined) {
    if (!e) throw new ExperimentError(`No experiment is running in study "${study.name}".`);
    return e.candidate;
  }
  if (e && e.candidate.name !== version)
    throw new ExperimentError(
      `The experiment running in study "${study.name}" tests ${e.candidate.name}: name it to promote or discard it.`,
    );
  if (study.arms.length < 2)
    throw new ExperimentError(
      `Study "${study.name}" compares no arms (${armList(study) || 'the deployed version'} plays it).`,
    );
  const arm = study.arms.find((a) => a.policyVersion.name === version);
  if (!arm) throw new ExperimentError(`"${version}" is not an arm of study "${study.name}" (arms: ${armList(study)}).`);
  return arm.policyVersion;
}

/**
 * Ends the comparison of a study's arms: `promote` deploys the version first (a failed deploy changes nothing,
 * so the stop can be tried again) and leaves it as the study's single arm; `discard` drops it from the arms and
 * leaves the deployed version as it is. A running A/B period is closed with the outcome. Audited, with `detail`
 * (the final figures).
 */
export async function stopArms(
  db: Database,
  actor: string,
  studyName: string,
  r: StopRequest,
  detail: Record<string, unknown> = {},
): Promise<StopResult> {
  if (r.outcome !== 'promote' && r.outcome !== 'discard')
    throw new ExperimentError(`The outcome is promote or discard, got "${String(r.outcome)}".`);
  const study = await armsStudy(db.prisma, studyName);
  const e = await runningExperiment(db.prisma, study.id);
  const target = stopTarget(study, e, r.version);
  let deployed: PolicyVersion | null = null;
  if (r.outcome === 'promote') {
    const current = await db.prisma.policyVersion.findUniqueOrThrow({ where: { id: target.id } });
    deployed =
      current.status === 'deployed'
        ? current
        : await switchDeployedPolicy(db, actor, current, 'experiment.promote', {
            detail: { study: study.name, experimentId: e?.id ?? null },
            notify: 'best-effort',
            force: r.force,
            operator: r.operator,
          });
  }
  return withStudyLock(db.prisma, study.id, async (tx) => {
    const now = (await findStudy(tx, study.name))!;
    const eNow = await runningExperiment(tx, study.id);
    if (eNow?.id !== e?.id || armList(now) !== armList(study))
      throw new ExperimentError(
        `The arms of study "${study.name}" changed meanwhile; look at the status and try again.`,
      );
    const arms = armsAfter(now, target.id, r.outcome);
    await setArms(tx, now.id, arms);
    const stopped = e
      ? await tx.experiment.update({
          where: { id: e.id },
          data: { status: 'stopped', outcome: r.outcome, stoppedBy: actor, stoppedAt: new Date() },
          include: WITH_VERSIONS,
        })
      : null;
    const after = (await findStudy(tx, study.name))!;
    await audit(tx, actor, 'experiment.stop', target.name, {
      study: study.name,
      experimentId: e?.id ?? null,
      outcome: r.outcome,
      arms: armList(after) || 'the deployed version',
      ...detail,
    } as Prisma.InputJsonObject);
    return { study: after, experiment: stopped, version: target, deployed };
  });
}

/** A session as the comparison of arms reads it (bot/experiments.ts): its arm is the version that played it. */
export interface ArmSession {
  policyVersionId: string;
  taskId: string;
  kind: 'backend' | 'frontend';
  status: 'active' | 'answered' | 'abandoned' | 'expired';
  endReason: string | null;
  turnCount: number;
  evaluation: { score: number; success: boolean } | null;
  /** Mean rating, or null. */
  rating: number | null;
}

/** The sessions of an A/B period, or of a whole study; gold checks (no version played them) are left out. */
export async function armSessions(
  prisma: PrismaClient,
  where: { experimentId: string } | { studyId: string },
): Promise<ArmSession[]> {
  const rows = await prisma.session.findMany({
    where: { ...where, policyVersionId: { not: null } },
    select: {
      policyVersionId: true,
      taskId: true,
      status: true,
      endReason: true,
      turnCount: true,
      task: { select: { kind: true } },
      evaluation: { select: { score: true, success: true } },
      ratings: { select: { value: true } },
    },
    orderBy: [{ startedAt: 'asc' }, { id: 'asc' }],
  });
  return rows.map((r) => ({
    policyVersionId: r.policyVersionId!,
    taskId: r.taskId,
    kind: r.task.kind,
    status: r.status,
    endReason: r.endReason,
    turnCount: r.turnCount,
    evaluation: r.evaluation,
    rating: r.ratings.length ? r.ratings.reduce((a, x) => a + x.value, 0) / r.ratings.length : null,
  }));
}
