// Studies at the database level, the only writer of Study, StudyTask and ConsentAcceptance rows, and of StudyArm
// rows at creation (an A/B test changes them later: prisma/experiment-store.ts):
// creating a study (every rule checked first, so bad input creates nothing), its status and consent text, the
// default study the bot collects in where no other is open, a person's acceptance of a consent version, and
// the per-study lock that assignment (bot/assign.ts) takes so that two people never overfill a task.
import { createHash } from 'node:crypto';
import type {
  Prisma,
  PrismaClient,
  Study,
  StudyArm,
  StudyStatus,
  TaskKind,
  TaskSplit,
  PolicyVersion,
  Participant,
} from './generated/client.ts';
import { UniqueViolationError, toDatabaseError } from './errors.ts';
import { audit } from './moderation-store.ts';
import { acceptConsent } from './participant-store.ts';
import { Rng } from '../tasks/random.ts';

type Tx = Prisma.TransactionClient;

/** The study the bot collects in where no other is open (its name is reserved). */
export const DEFAULT_STUDY = 'default';

/** Arbitrary, fixed: the first key of the study locks (pg_advisory_xact_lock(class, key)). */
const STUDY_LOCK_CLASS = 0x5374_7564; // "Stud"

/** A study action that cannot be done; the message is meant for whoever asked. */
export class StudyError extends Error {
  override name = 'StudyError';
}

export type StudyWithArms = Study & { arms: (StudyArm & { policyVersion: PolicyVersion })[] };

export interface NewStudy {
  name: string;
  kind: TaskKind | null;
  split: TaskSplit;
  perTask: number;
  seed: number;
  /** The pool (task ids); stored in a seeded order. */
  taskIds: readonly string[];
  /** Policy versions and their shares in percent (one arm at 100: a single policy). */
  arms: readonly { policyVersionId: string; share: number }[];
  consentText: string | null;
  payPerSessionCents: number | null;
  bonusSuccessCents: number | null;
  currency: string | null;
  maxSessionsPerPerson: number | null;
  opensAt: Date | null;
  closesAt: Date | null;
  guildIds: readonly string[];
  channelIds: readonly string[];
  /** A recruiting platform whose participant id people give once before their first session (prisma/pay-account-store.ts). */
  participantIdPlatform?: string | null;
  /** Shown to a person after their last session of the study. */
  completionCode?: string | null;
}

export function consentSha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * The rule that a study runs on Discord only with a consent text of its own (the default study excepted: it uses
 * the bot's configured notice). Checked when a study is created or opened, and when someone joins it.
 */
export function lacksConsent(s: { name: string; consentText: string | null }, onDiscord: boolean): boolean {
  return onDiscord && s.name !== DEFAULT_STUDY && !s.consentText;
}

const isWhole = (n: number | null, min: number) => n === null || (Number.isInteger(n) && n >= min);

/** The rules a new study must meet, without the database; the first broken one as a sentence, else null. */
export function studyInputError(s: NewStudy, o: { requireConsent: boolean }): string | null {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(s.name))
    return `A study name is 1-64 letters, digits, ".", "_" or "-" (got "${s.name}").`;
  if (s.name === DEFAULT_STUDY)
    return `"${DEFAULT_STUDY}" is the name of the study the bot uses where no other is open; choose another.`;
  if (!Number.isInteger(s.perTask) || s.perTask < 1)
    return `Sessions per task (k) must be a whole number of at least 1, got ${s.perTask}.`;
  if (!Number.isInteger(s.seed)) return `The seed must be an integer, got ${s.seed}.`;
  if (s.taskIds.length === 0) return 'The study has no tasks: give a file of task ids, or --kind / --sample.';
  if (new Set(s.taskIds).size !== s.taskIds.length) return 'The task list names a task more than once.';
  if (s.arms.length === 0) return 'The study needs a policy (--policy) or arms (--arm VERSION:SHARE).';
  if (new Set(s.arms.map((a) => a.policyVersionId)).size !== s.arms.length)
    return 'Two arms name the same policy version.';
  if (!s.arms.every((a) => Number.isInteger(a.share) && a.share >= 1 && a.share <= 100))
    return "Each arm's share is a whole percentage from 1 to 100.";
  const total = s.arms.reduce((a, x) => a + x.share, 0);
  if (total !== 100) return `The arms' shares must sum to 100, they sum to ${total}.`;
  if (s.opensAt && s.closesAt && s.closesAt.getTime() <= s.opensAt.getTime())
    return `The study closes (${s.closesAt.toISOString()}) before it opens (${s.opensAt.toISOString()}).`;
  if (!isWhole(s.maxSessionsPerPerson, 1))
    return `Sessions per person must be a whole number of at least 1, got ${s.maxSessionsPerPerson}.`;
  if (!isWhole(s.payPerSessionCents, 0) || !isWhole(s.bonusSuccessCents, 0)) return 'Pay amounts cannot be negative.';
  if ((s.payPerSessionCents !== null || s.bonusSuccessCents !== null) && !s.currency)
    return 'Pay rules need a currency (--currency).';
  if (s.currency !== null && !/^[A-Z]{3}$/.test(s.currency))
    return `A currency is a three-letter ISO 4217 code such as EUR or USD, got "${s.currency}".`;
  if (s.consentText !== null && !s.consentText.trim()) return 'The consent text is empty.';
  if (s.participantIdPlatform && s.participantIdPlatform !== 'prolific')
    return `A study can ask for a participant id on prolific only, got "${s.participantIdPlatform}".`;
  if (s.completionCode && !/^[A-Za-z0-9_-]{1,64}$/.test(s.completionCode))
    return `A completion code is 1-64 letters, digits, "_" or "-", got "${s.completionCode}".`;
  if (lacksConsent(s, o.requireConsent))
    return 'A study that runs on Discord needs a consent text (--consent-file): people must be told what is recorded before it opens.';
  return null;
}

/**
 * Creates a study with its pool (in the order the seed gives) and arms, audited, in one transaction; every rule
 * is checked first (studyInputError, then that the tasks exist with the study's kind and split), so a refused
 * study leaves nothing behind. `requireConsent`: a Discord bot is configured (DISCORD_TOKEN).
 */
export async function createStudy(
  prisma: PrismaClient,
  actor: string,
  s: NewStudy,
  o: { requireConsent: boolean },
): Promise<StudyWithArms> {
  const bad = studyInputError(s, o);
  if (bad) throw new StudyError(bad);
  try {
    return await prisma.$transaction(
      async (tx) => {
        if (await tx.study.findUnique({ where: { name: s.name }, select: { id: true } }))
          throw new StudyError(`A study named "${s.name}" exists already.`);
        const tasks = await tx.task.findMany({
          where: { id: { in: [...s.taskIds] } },
          select: { id: true, kind: true, split: true },
        });
        const found = new Map(tasks.map((t) => [t.id, t]));
        const unknown = s.taskIds.filter((id) => !found.has(id));
        if (unknown.length)
          throw new StudyError(
            `Unknown task id(s): ${unknown.slice(0, 5).join(', ')}${unknown.length > 5 ? ` and ${unknown.length - 5} more` : ''}.`,
          );
        const wrong = tasks.find((t) => t.split !== s.split || (s.kind !== null && t.kind !== s.kind));
        if (wrong)
          throw new StudyError(
            `Task ${wrong.id} is a ${wrong.split}-split ${wrong.kind} task; this study takes ${s.split}-split ${s.kind ?? 'backend or frontend'} tasks.`,
          );
        const versions = await tx.policyVersion.count({
          where: { id: { in: s.arms.map((a) => a.policyVersionId) }, status: { not: 'removed' } },
        });
        if (versions !== s.arms.length)
          throw new StudyError('An arm names a policy version that does not exist or was removed.');
        const consent =
          s.consentText === null
            ? {}
            : { consentText: s.consentText, consentVersion: 1, consentSha256: consentSha256(s.consentText) };
        const study = await tx.study.create({
          data: {
            name: s.name,
            kind: s.kind,
            split: s.split,
            perTask: s.perTask,
            seed: s.seed,
            ...consent,
            payPerSessionCents: s.payPerSessionCents,
            bonusSuccessCents: s.bonusSuccessCents,
            currency: s.currency,
            maxSessionsPerPerson: s.maxSessionsPerPerson,
            participantIdPlatform: s.participantIdPlatform ?? null,
            completionCode: s.completionCode ?? null,
            opensAt: s.opensAt,
            closesAt: s.closesAt,
            guildIds: [...s.guildIds],
            channelIds: [...s.channelIds],
            createdBy: actor,
          },
        });
        // The seeded order the pool fills in: the same ids and seed give the same order.
        const order = Rng.derive(s.seed, 'study-order').shuffle([...s.taskIds].sort());
        await tx.studyTask.createMany({
          data: order.map((taskId, position) => ({ studyId: study.id, taskId, position })),
        });
        await tx.studyArm.createMany({
          data: s.arms.map((a) => ({ studyId: study.id, policyVersionId: a.policyVersionId, share: a.share })),
        });
        await audit(tx, actor, 'study.create', s.name, {
          studyId: study.id,
          tasks: order.length,
          perTask: s.perTask,
          seed: s.seed,
          arms: s.arms.map((a) => ({ ...a })),
          consentVersion: study.consentVersion,
        });
        return tx.study.findUniqueOrThrow({
          where: { id: study.id },
          include: { arms: { include: { policyVersion: true } } },
        });
      },
      { timeout: 120_000, maxWait: 30_000 },
    );
  } catch (err) {
    if (toDatabaseError(err) instanceof UniqueViolationError)
      throw new StudyError(`A study named "${s.name}" exists already.`);
    throw err;
  }
}

export async function findStudy(prisma: PrismaClient | Tx, name: string): Promise<StudyWithArms | null> {
  return prisma.study.findUnique({ where: { name }, include: { arms: { include: { policyVersion: true } } } });
}

async function studyNamed(prisma: PrismaClient | Tx, name: string): Promise<StudyWithArms> {
  const s = await findStudy(prisma, name);
  if (!s) throw new StudyError(`No study named "${name}".`);
  return s;
}

/**
 * Opens (resume), pauses or closes a study, audited. A closed study stays closed; a study without a consent
 * text does not open where `requireConsent` (a Discord bot is configured).
 */
export async function setStudyStatus(
  prisma: PrismaClient,
  actor: string,
  name: string,
  status: StudyStatus,
  o: { requireConsent: boolean },
): Promise<StudyWithArms> {
  return prisma.$transaction(async (tx) => {
    const s = await studyNamed(tx, name);
    if (s.name === DEFAULT_STUDY)
      throw new StudyError(`The default study follows the bot: pause collection with /mod pause instead.`);
    if (s.status === 'closed' && status !== 'closed')
      throw new StudyError(`Study "${name}" is closed; a closed study does not open again.`);
    if (s.status === status) return s;
    if (status === 'open' && lacksConsent(s, o.requireConsent))
      throw new StudyError(
        `Study "${name}" has no consent text; set one with \`sweetloop study consent ${name} --consent-file FILE\` before it opens.`,
      );
    await tx.study.update({ where: { id: s.id }, data: { status } });
    await audit(tx, actor, `study.${status === 'open' ? 'resume' : status === 'paused' ? 'pause' : 'close'}`, name, {
      studyId: s.id,
      from: s.status,
    });
    return studyNamed(tx, name);
  });
}

/** Stores a new consent text (its version goes up by one); people accept it before their next session. */
export async function setStudyConsent(
  prisma: PrismaClient,
  actor: string,
  name: string,
  text: string,
): Promise<StudyWithArms> {
  if (!text.trim()) throw new StudyError('The consent text is empty.');
  return prisma.$transaction(async (tx) => {
    const s = await studyNamed(tx, name);
    if (s.name === DEFAULT_STUDY)
      throw new StudyError("The default study uses the bot's configured notice (CONSENT_TEXT).");
    const sha256 = consentSha256(text);
    if (sha256 === s.consentSha256) return s;
    const version = s.consentVersion + 1;
    await tx.study.update({
      where: { id: s.id },
      data: { consentText: text, consentVersion: version, consentSha256: sha256 },
    });
    await audit(tx, actor, 'study.consent', name, { studyId: s.id, version, sha256 });
    return studyNamed(tx, name);
  });
}

/**
 * Records that a person accepted version `version` of a study's consent text (and the bot's consent, in the
 * same transaction; the caller writes the audit row). Refused when the study's text has changed since it was shown: the person has not read it.
 */
export async function acceptStudyConsent(
  prisma: PrismaClient,
  externalId: string,
  displayName: string | null,
  studyId: string,
  version: number,
  auditRow?: Prisma.Sql,
): Promise<Participant> {
  return prisma.$transaction(async (tx) => {
    const s = await tx.study.findUniqueOrThrow({ where: { id: studyId } });
    if (s.consentVersion !== version || !s.consentSha256)
      throw new StudyError(
        'The consent text of this study has changed since it was shown to you. Please run /task start again to read the new version.',
      );
    const p = await acceptConsent(tx, externalId, displayName, auditRow);
    await tx.consentAcceptance.upsert({
      where: { participantId_studyId_version: { participantId: p.id, studyId, version } },
      create: { participantId: p.id, studyId, version, sha256: s.consentSha256 },
      update: {},
    });
    return p;
  });
}

/** Runs `fn` in a transaction holding the study's lock: assignments in one study happen one at a time. */
export async function withStudyLock<T>(prisma: PrismaClient, studyId: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return prisma.$transaction(
    async (tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(${STUDY_LOCK_CLASS}::int, hashtext(${studyId}))`;
      return fn(tx);
    },
    { timeout: 30_000, maxWait: 30_000 },
  );
}

/**
 * The default study, created on first use, with its pool brought up to the stored tasks (new tasks join at the
 * end of its order). It has no cap per task, no arms outside an A/B test (the deployed version plays) and no
 * consent text of its own.
 */
export async function defaultStudy(
  prisma: PrismaClient,
  read?: { study: StudyWithArms | null },
): Promise<StudyWithArms> {
  // `read`: the caller has just read it (or found none) with the other studies (bot/assign.ts studyFor).
  const existing = read ? read.study : await findStudy(prisma, DEFAULT_STUDY);
  const id =
    existing?.id ??
    (
      await prisma.study.upsert({
        where: { name: DEFAULT_STUDY },
        create: { name: DEFAULT_STUDY, seed: 0, createdBy: 'bot' },
        update: {},
        select: { id: true },
      })
    ).id;
  const missing = await prisma.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM "Task" t WHERE NOT EXISTS (SELECT 1 FROM "StudyTask" st WHERE st."studyId" = ${id}::uuid AND st."taskId" = t.id)`;
  const added = (missing[0]?.n ?? 0) > 0;
  // Read again only when it changed (every admission reads the default study: bench:bot, bench/RESULTS.md).
  if (!added && existing) return existing;
  if (added) {
    await withStudyLock(prisma, id, async (tx) => {
      await tx.$executeRaw`
        INSERT INTO "StudyTask" ("studyId", "taskId", "position")
        SELECT ${id}::uuid, t.id,
               (SELECT COALESCE(max(position) + 1, 0) FROM "StudyTask" WHERE "studyId" = ${id}::uuid) + row_number() OVER (ORDER BY md5(t.id::text)) - 1
        FROM "Task" t
        WHERE NOT EXISTS (SELECT 1 FROM "StudyTask" st WHERE st."studyId" = ${id}::uuid AND st."taskId" = t.id)`;
    });
  }
  return (await findStudy(prisma, DEFAULT_STUDY))!;
}

/**
 * Records that a study's payouts file was written (it names people by platform id, so who wrote it, when and what
 * it held are audited: the totals, never the ids).
 */
export async function recordPayoutsWritten(
  prisma: PrismaClient,
  actor: string,
  name: string,
  detail: {
    studyId: string;
    people: number;
    erasedPeople: number;
    sessions: number;
    totalCents: number;
    currency: string;
    file: string;
    format?: string;
  },
): Promise<void> {
  await audit(prisma, actor, 'study.payouts', name, detail);
}

/** Keeps a calibration's result (`sweetloop study calibrate`) for the dashboard; JSON has no NaN: stored as null. */
export async function recordCalibration(
  prisma: PrismaClient,
  studyId: string,
  simulator: string,
  result: unknown,
): Promise<void> {
  const json = JSON.parse(
    JSON.stringify(result, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v)),
  ) as Prisma.InputJsonObject;
  await prisma.studyCalibration.create({ data: { studyId, simulator, result: json } });
}
