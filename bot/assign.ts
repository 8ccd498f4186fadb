// Which study a person joins and which task they get in it: the one assignment path, for every study and for the
// default study the bot collects in where no other is open.
//
// Joining: `/task start` joins the open study bound to where it runs (its channel's studies, else its guild's),
// else the oldest open study bound nowhere, else the default study. A study bound here that is paused, closed or not yet
// open says so; an unbound paused study stops collection everywhere it would have run; a full study says it is
// full. Nobody is sent elsewhere instead.
//
// Filling: within a study each task receives k sessions from k different people. Tasks fill in the study's seeded
// order: a person gets the earliest task that still has a free slot and that they have never had, so only a few
// tasks are open at a time and a study stopped early leaves complete k-blocks. A slot is held by an active or
// answered session; an abandoned or expired one frees it. Choosing and creating the session happen under the
// study's lock (prisma/study-store.ts withStudyLock), so two people racing for the last slot never overfill a
// task. The default study has no k: it gives the task with the fewest sessions (balanced collection), training
// tasks first and test tasks only when no training task is left for the person.
//
// Arms: a task's k sessions are split between the study's arms in their shares. Each slot goes to the arm
// furthest below its share of the task's sessions so far; ties go by an order seeded by the study and rotated by
// the task's position, so that with two arms at 50% and an odd k the arm with the extra session alternates
// between tasks. This is the only way a session gets its policy: an A/B test with people (/mod experiment,
// `sweetloop study arms`, the trainer's human A/B) sets the arms of a study for a period (prisma/
// experiment-store.ts); during one, only the period's sessions count towards the shares, and each new session
// is tagged with the period, so every task's sessions are split between control and candidate (paired by task).
import type { Prisma, PrismaClient, Study, TaskKind, TaskSplit } from '../prisma/generated/client.ts';
import { runningExperiment } from '../prisma/experiment-store.ts';
import { DEFAULT_STUDY, defaultStudy, withStudyLock, type StudyWithArms } from '../prisma/study-store.ts';
import { Rng } from '../tasks/random.ts';

type Tx = Prisma.TransactionClient;
type Arm = StudyWithArms['arms'][number];

export type StudyRefusalReason =
  | 'study-full'
  | 'study-paused'
  | 'study-closed'
  | 'study-not-open'
  | 'study-limit'
  | 'no-task';

/** The study will not give this person a session now; `message` is meant for the person. */
export class StudyRefusedError extends Error {
  override name = 'StudyRefusedError';
  constructor(
    readonly reason: StudyRefusalReason,
    message: string,
  ) {
    super(message);
  }
}

export type StudyState = 'open' | 'paused' | 'closed' | 'not-yet';

/** Whether the study takes sessions at `now`: its status, within its opening and closing dates. */
export function studyState(s: Pick<Study, 'status' | 'opensAt' | 'closesAt'>, now: Date): StudyState {
  if (s.status === 'closed' || (s.closesAt && now.getTime() >= s.closesAt.getTime())) return 'closed';
  if (s.status === 'paused') return 'paused';
  if (s.opensAt && now.getTime() < s.opensAt.getTime()) return 'not-yet';
  return 'open';
}

function refusalFor(s: Study, state: Exclude<StudyState, 'open'>): StudyRefusedError {
  if (state === 'paused')
    return new StudyRefusedError('study-paused', 'This study is paused right now. Please try again later.');
  if (state === 'closed')
    return new StudyRefusedError('study-closed', 'This study has closed. Thank you for your interest!');
  return new StudyRefusedError(
    'study-not-open',
    `This study opens on ${s.opensAt!.toISOString().slice(0, 16).replace('T', ' ')} UTC. Please come back then.`,
  );
}

export interface Place {
  guildId?: string | null | undefined;
  channelId?: string | null | undefined;
}

/** The study someone asking at `where` joins, or why they cannot take part in it now (see the file's comment). */
export async function studyFor(
  prisma: PrismaClient,
  where: Place,
  now = new Date(),
): Promise<{ study: StudyWithArms; refusal: StudyRefusedError | null }> {
  const all = await readStudies(prisma);
  return (
    chooseStudy(all, where, now) ?? {
      study: await defaultStudy(prisma, { study: all.find((s) => s.name === DEFAULT_STUDY) ?? null }),
      refusal: null,
    }
  );
}

/** Every study with its arms and their versions, as studyFor and chooseStudy read them. */
export function readStudies(prisma: PrismaClient): Promise<StudyWithArms[]> {
  return prisma.study.findMany({
    include: { arms: { include: { policyVersion: true } } },
    orderBy: [{ createdAt: 'asc' }, { name: 'asc' }],
  });
}

/**
 * studyFor's choice among the studies read (`all`, in readStudies' order); null where the person joins the default
 * study (which the caller reads, creating it or filling its pool where needed: prisma/study-store.ts defaultStudy).
 */
export function chooseStudy(
  all: readonly StudyWithArms[],
  where: Place,
  now: Date,
): { study: StudyWithArms; refusal: StudyRefusedError | null } | null {
  const studies = all.filter((s) => s.name !== DEFAULT_STUDY);
  const inChannel = where.channelId ? studies.filter((s) => s.channelIds.includes(where.channelId!)) : [];
  const here = inChannel.length
    ? inChannel
    : where.guildId
      ? studies.filter((s) => s.guildIds.includes(where.guildId!))
      : [];
  const open = (list: StudyWithArms[]) => list.find((s) => studyState(s, now) === 'open');
  if (here.length) {
    const joined = open(here);
    if (joined) return { study: joined, refusal: null };
    const latest = [...here].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())[0]!;
    return { study: latest, refusal: refusalFor(latest, studyState(latest, now) as Exclude<StudyState, 'open'>) };
  }
  const unbound = studies.filter((s) => s.guildIds.length === 0 && s.channelIds.length === 0);
  const joined = open(unbound);
  if (joined) return { study: joined, refusal: null };
  const paused = unbound.find((s) => studyState(s, now) === 'paused');
  if (paused) return { study: paused, refusal: refusalFor(paused, 'paused') };
  return null;
}

/** The kind with the fewer answered sessions per task in the study's pool (a kind with no task is never chosen). */
export async function neededKind(prisma: PrismaClient, studyId: string): Promise<TaskKind> {
  const rows = await prisma.$queryRaw<{ kind: TaskKind; tasks: number; answered: number }[]>`
    SELECT t.kind::text AS kind, count(DISTINCT t.id)::int AS tasks, count(s.id)::int AS answered
    FROM "StudyTask" st
    JOIN "Task" t ON t.id = st."taskId"
    LEFT JOIN "Session" s ON s."taskId" = t.id AND s."studyId" = st."studyId" AND s.status = 'answered'
    WHERE st."studyId" = ${studyId}::uuid
    GROUP BY t.kind`;
  const per = rows
    .filter((r) => r.tasks > 0)
    .sort((a, b) => a.answered / a.tasks - b.answered / b.tasks || a.kind.localeCompare(b.kind));
  return per[0]?.kind ?? 'backend';
}

/** The arm playing the next slot of a task (see the file's comment); `counts`: its sessions per policy version. */
export function armFor(
  study: Pick<StudyWithArms, 'seed' | 'arms'>,
  position: number,
  counts: ReadonlyMap<string, number>,
): Arm {
  if (study.arms.length === 0) throw new Error('armFor: the study has no arms');
  const order = Rng.derive(study.seed, 'study-arms').shuffle(
    [...study.arms].sort((a, b) => a.policyVersionId.localeCompare(b.policyVersionId)),
  );
  const rotated = order.map((_, i) => order[(i + position) % order.length]!);
  const filled = [...counts.values()].reduce((a, n) => a + n, 0);
  let best = rotated[0]!;
  let bestDeficit = Number.NEGATIVE_INFINITY;
  for (const arm of rotated) {
    const deficit = (arm.share * (filled + 1)) / 100 - (counts.get(arm.policyVersionId) ?? 0);
    if (deficit > bestDeficit + 1e-9) [best, bestDeficit] = [arm, deficit];
  }
  return best;
}

export interface TaskPick {
  taskId: string;
  /** The task's place in the study's order. */
  position: number;
  /** The arm that plays the session; null in a study without arms (the default study: the deployed version). */
  arm: Arm | null;
  /** The A/B period the arms belong to (Session.experimentId), when one is running in the study. */
  experimentId: string | null;
}

const HOLDS_SLOT = ['active', 'answered'] as const;

async function firstFreeTask(
  tx: Tx,
  study: StudyWithArms,
  participantId: string,
  kind: TaskKind,
  split: TaskSplit,
): Promise<{ taskId: string; position: number } | null> {
  const k = study.perTask;
  const rows = await tx.$queryRaw<{ taskId: string; position: number }[]>`
    SELECT st."taskId"::text AS "taskId", st.position
    FROM "StudyTask" st
    JOIN "Task" t ON t.id = st."taskId"
    LEFT JOIN "Session" s ON s."studyId" = st."studyId" AND s."taskId" = st."taskId" AND s.status IN ('active', 'answered')
    WHERE st."studyId" = ${study.id}::uuid AND t.kind = ${kind}::"TaskKind" AND t.split = ${split}::"TaskSplit"
      AND NOT EXISTS (SELECT 1 FROM "Session" mine WHERE mine."taskId" = st."taskId" AND mine."participantId" = ${participantId}::uuid)
    GROUP BY st."taskId", st.position
    HAVING ${k}::int IS NULL OR count(s.id) < ${k}::int
    ORDER BY CASE WHEN ${k}::int IS NULL THEN count(s.id) ELSE 0 END, st.position
    LIMIT 1`;
  return rows[0] ?? null;
}

/** Tasks of the kind with a free slot, whoever asks (0: the study is full). */
async function freeTasks(tx: Tx, study: StudyWithArms, kind: TaskKind): Promise<number> {
  const rows = await tx.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM (
      SELECT st."taskId"
      FROM "StudyTask" st
      JOIN "Task" t ON t.id = st."taskId"
      LEFT JOIN "Session" s ON s."studyId" = st."studyId" AND s."taskId" = st."taskId" AND s.status IN ('active', 'answered')
      WHERE st."studyId" = ${study.id}::uuid AND t.kind = ${kind}::"TaskKind"
      GROUP BY st."taskId"
      HAVING count(s.id) < ${study.perTask ?? 0}::int
    ) free`;
  return rows[0]?.n ?? 0;
}

/**
 * The task (and arm) for this person in this study, or a StudyRefusedError saying why there is none. Run it under
 * the study's lock. `experimentId`: the A/B period running in the study, whose sessions alone count towards the arms' shares.
 */
export async function pickTask(
  tx: Tx,
  study: StudyWithArms,
  participantId: string,
  kind: TaskKind,
  experimentId: string | null = null,
): Promise<TaskPick> {
  if (study.kind && study.kind !== kind)
    throw new StudyRefusedError('no-task', `This study has only ${study.kind} tasks.`);
  if (study.maxSessionsPerPerson !== null) {
    const mine = await tx.session.count({
      where: { studyId: study.id, participantId, status: { in: [...HOLDS_SLOT] } },
    });
    if (mine >= study.maxSessionsPerPerson) {
      throw new StudyRefusedError(
        'study-limit',
        `You have done the ${study.maxSessionsPerPerson} session(s) this study allows per person. Thank you for taking part!`,
      );
    }
  }
  const splits: TaskSplit[] = study.name === DEFAULT_STUDY ? ['train', 'test'] : [study.split];
  for (const split of splits) {
    const free = await firstFreeTask(tx, study, participantId, kind, split);
    if (!free) continue;
    if (study.arms.length === 0) return { ...free, arm: null, experimentId: null };
    const held = await tx.session.groupBy({
      by: ['policyVersionId'],
      where: {
        studyId: study.id,
        taskId: free.taskId,
        status: { in: [...HOLDS_SLOT] },
        ...(experimentId ? { experimentId } : {}),
      },
      _count: { _all: true },
    });
    const counts = new Map(held.filter((h) => h.policyVersionId).map((h) => [h.policyVersionId!, h._count._all]));
    return { ...free, arm: armFor(study, free.position, counts), experimentId };
  }
  if (study.perTask === null)
    throw new StudyRefusedError(
      'no-task',
      `There is no ${kind} task left that you have not done yet. Thank you for all your sessions!`,
    );
  if ((await freeTasks(tx, study, kind)) === 0)
    throw new StudyRefusedError(
      'study-full',
      'This study is full: every task has all the sessions it needs. Thank you for your interest!',
    );
  throw new StudyRefusedError(
    'no-task',
    'You have already had every task of this study that still needs a session. Thank you for taking part!',
  );
}

/**
 * Chooses this person's task in the study and hands it to `create`, which creates the session in the same
 * transaction, under the study's lock: the study is read again there (a pause or close since it was joined
 * counts; `create` gets it as read, e.g. to see whether its consent text changed), unless `unchanged` says it
 * has not changed, and no other assignment in the study runs until the session exists.
 */
export async function assignTask<T>(
  prisma: PrismaClient,
  study: StudyWithArms,
  participantId: string,
  kind: TaskKind,
  create: (tx: Tx, pick: TaskPick, current: StudyWithArms) => Promise<T>,
  unchanged?: (tx: Tx) => Promise<boolean>,
): Promise<T> {
  return withStudyLock(prisma, study.id, async (tx) => {
    // `unchanged`: asks, under the lock, whether nothing the study is read with has changed since `study` was read
    // (one round trip where reading it again takes three: bot/session/directory.ts).
    const now =
      unchanged && (await unchanged(tx))
        ? study
        : await tx.study.findUniqueOrThrow({
            where: { id: study.id },
            include: { arms: { include: { policyVersion: true } } },
          });
    const state = studyState(now, new Date());
    if (state !== 'open') throw refusalFor(now, state);
    const ab = now.arms.length > 1 ? await runningExperiment(tx, now.id) : null;
    return create(tx, await pickTask(tx, now, participantId, kind, ab?.id ?? null), now);
  });
}
