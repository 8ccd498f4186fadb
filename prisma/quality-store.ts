// Collaborator quality in the database: the signals of tasks/quality.ts computed for every finished session of a
// person (SessionQuality), each person's score (ParticipantQuality), the automatic flag on a session whose
// replies pasted the hidden reference, and a moderator's exclusion of a person's sessions from training
// (TrainingExclusion; the sessions stay, and exports keep them). Every moderator action is audited.
import { Prisma, type PrismaClient } from './generated/client.ts';
import {
  personQuality,
  sessionScore,
  sessionSignals,
  SIGNAL_NAMES,
  type PersonQuality,
  type QualitySession,
  type SessionSignals,
  type SignalName,
} from '../tasks/quality.ts';
import { personSql, personWhere } from './cohorts.ts';

/** Reason of the flag put on a session whose replies pasted the reference (a moderator may resolve it). */
export const PASTE_FLAG_REASON = 'quality: hidden reference pasted in the replies';

/** What the person is told, where they played, when their session gets that flag (bot/session/turns.ts). */
export const PASTE_NOTICE =
  "This session will be left out of training and exports: your replies repeat the hidden reference's code. " +
  'Describe what the code does in your own words instead (repeating its comments is fine). A moderator can review and clear this.';

/** The sessions played by people (not simulated collaborators) that have ended. */
type QualityStatus = QualitySession['status'];
const ENDED: readonly QualityStatus[] = ['answered', 'abandoned', 'expired'];
const humanEnded = {
  simulated: false,
  status: { in: [...ENDED] },
  participant: personWhere,
} satisfies Prisma.SessionWhereInput;

export interface RefreshResult {
  /** Sessions looked at. */
  sessions: number;
  /** People whose score was recomputed (one of their sessions changed). */
  participants: number;
  /** Sessions newly flagged for a pasted reference. */
  flagged: string[];
}

const PAGE = 200;

/** JSON with sorted keys: Postgres' jsonb does not keep the order keys were written in. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

/**
 * Recomputes the quality of the ended sessions of people (all of them, or those of `participantIds`) and the
 * scores of their people; flags (once) each session whose replies pasted the reference. Idempotent: a flag a
 * moderator resolved is not raised again.
 */
export async function refreshQuality(
  prisma: PrismaClient,
  o: { participantIds?: string[]; sessionIds?: string[] } = {},
): Promise<RefreshResult> {
  const where: Prisma.SessionWhereInput = {
    ...humanEnded,
    ...(o.participantIds ? { participantId: { in: o.participantIds } } : {}),
    ...(o.sessionIds ? { id: { in: o.sessionIds } } : {}),
  };
  const touched = new Set<string>();
  const flagged: string[] = [];
  let sessions = 0;
  let cursor: string | undefined;
  for (;;) {
    const page = await prisma.session.findMany({
      where,
      orderBy: { id: 'asc' },
      take: PAGE,
      ...(cursor ? { cursor: { id: cursor }, skip: 1 } : {}),
      include: {
        task: { select: { kind: true, hiddenReference: true, description: true } },
        turns: {
          where: { role: { in: ['agent', 'human'] } },
          orderBy: { index: 'asc' },
          select: { role: true, content: true, createdAt: true },
        },
        evaluation: { select: { score: true, success: true } },
        ratings: { select: { value: true } },
        flags: { where: { reason: PASTE_FLAG_REASON }, select: { id: true } },
        quality: { select: { score: true, signals: true } },
      },
    });
    if (page.length === 0) break;
    cursor = page.at(-1)!.id;
    for (const s of page) {
      sessions++;
      const q = assess(
        s,
        s.ratings.map((r) => r.value),
        s.flags.length > 0,
        s.quality,
      );
      if (!q) continue;
      if (await storeSessionQuality(prisma, s.id, q)) flagged.push(s.id);
      touched.add(s.participantId);
    }
    if (page.length < PAGE) break;
  }
  for (const participantId of touched) await refreshPerson(prisma, participantId);
  return { sessions, participants: touched.size, flagged };
}

/** What the quality of one ended session is computed from (as refreshQuality reads it, or as the bot holds it). */
interface QualityInput {
  status: string;
  endReason: string | null;
  goldSourceId: string | null;
  task: { kind: string; hiddenReference: string; description: string };
  /** Its turns in index order (notices among them are left out here). */
  turns: readonly { role: string; content: string; createdAt: Date }[];
  evaluation: { score: number; success: boolean } | null;
}

interface Assessment {
  signals: SessionSignals;
  score: number;
  pasteToFlag: boolean;
}

/**
 * The session's signals and score, and whether its paste is still to be flagged; null when nothing changed since
 * the stored quality (most sessions, at each refresh: nothing is written for them, nor is their person rescored).
 */
function assess(
  s: QualityInput,
  ratings: readonly number[],
  pasteFlagged: boolean,
  stored: { score: number; signals: unknown } | null,
): Assessment | null {
  const signals = sessionSignals({
    kind: s.task.kind as 'backend' | 'frontend',
    hiddenReference: s.task.hiddenReference,
    description: s.task.description,
    turns: s.turns
      .filter((t) => t.role === 'agent' || t.role === 'human')
      .map((t) => ({ role: t.role as 'agent' | 'human', content: t.content, at: t.createdAt })),
    status: s.status as QualityStatus,
    endReason: s.endReason,
    evaluation: s.evaluation ? { score: s.evaluation.score, success: s.evaluation.success } : null,
    rating: ratings.length ? ratings.reduce((a, r) => a + r, 0) / ratings.length : null,
    gold: s.goldSourceId !== null,
  });
  const score = sessionScore(signals);
  const pasteToFlag = signals.referencePasted && !pasteFlagged;
  if (!pasteToFlag && stored && stored.score === score && canonical(stored.signals) === canonical(signals)) return null;
  return { signals, score, pasteToFlag };
}

/** Writes a session's quality (and the paste flag it raises, audited); true when it flagged the session. */
async function storeSessionQuality(prisma: PrismaClient, sessionId: string, q: Assessment): Promise<boolean> {
  const data = { score: q.score, signals: q.signals as unknown as Prisma.InputJsonObject, computedAt: new Date() };
  await prisma.$transaction(async (tx) => {
    await tx.sessionQuality.upsert({ where: { sessionId }, create: { sessionId, ...data }, update: data });
    if (q.pasteToFlag) {
      await tx.moderationFlag.create({ data: { sessionId, reason: PASTE_FLAG_REASON } });
      await tx.auditLog.create({
        data: {
          actor: 'quality',
          action: 'session.flag',
          target: sessionId,
          detail: { reason: PASTE_FLAG_REASON, paste: { ...q.signals.paste } },
        },
      });
    }
  });
  return q.pasteToFlag;
}

/**
 * refreshQuality for one session the caller holds (the bot, once its answer is scored: its turns, task and
 * evaluation are in memory), in one round trip for what it does not hold (its ratings, its paste flag, its stored
 * quality, and its person's other sessions' signals) and one to write the session's and its person's quality:
 * refreshQuality took nineteen (bench:bot, bench/RESULTS.md). A session refreshQuality would leave alone (simulated,
 * not ended, or no longer a person's) is left alone. Returns whether it flagged the session for a pasted reference.
 */
export async function refreshSessionQuality(
  prisma: PrismaClient,
  s: QualityInput & { id: string; participantId: string; simulated: boolean },
  deferWrite = false,
): Promise<{ flagged: boolean; write?: Prisma.Sql }> {
  if (s.simulated || !ENDED.includes(s.status as QualityStatus)) return { flagged: false };
  const [row] = await prisma.$queryRaw<
    {
      ratings: number[];
      pasteFlagged: boolean;
      stored: { score: number; signals: unknown } | null;
      others: unknown[];
    }[]
  >`
    SELECT
      ARRAY(SELECT r.value FROM "Rating" r WHERE r."sessionId" = ${s.id}::uuid) AS ratings,
      EXISTS (SELECT 1 FROM "ModerationFlag" f WHERE f."sessionId" = ${s.id}::uuid AND f.reason = ${PASTE_FLAG_REASON}) AS "pasteFlagged",
      (SELECT json_build_object('score', q.score, 'signals', q.signals) FROM "SessionQuality" q WHERE q."sessionId" = ${s.id}::uuid) AS stored,
      coalesce((SELECT json_agg(o.signals) FROM "SessionQuality" o JOIN "Session" os ON os.id = o."sessionId"
        WHERE os."participantId" = p.id AND os.id <> ${s.id}::uuid), '[]'::json) AS others
    FROM "Participant" p
    WHERE p.id = ${s.participantId}::uuid AND ${personSql('p')}`;
  if (!row) return { flagged: false };
  const q = assess(s, row.ratings, row.pasteFlagged, row.stored);
  if (!q) return { flagged: false };
  const person = personQuality([...(row.others as SessionSignals[]), q.signals]);
  if (q.pasteToFlag) {
    await storeSessionQuality(prisma, s.id, q);
    await storePerson(prisma, s.participantId, person);
    return { flagged: true };
  }
  const at = new Date();
  // The session's quality and its person's in one statement (a refresh found no paste to flag); with `deferWrite`,
  // handed back as common table expressions for the caller's next write to carry (`WITH ${write} ...`: the result
  // shown, prisma/session-store.ts markResultAndRatingShown), one round trip fewer.
  const write = Prisma.sql`
    q AS (
      INSERT INTO "SessionQuality" ("sessionId", score, signals, "computedAt")
      VALUES (${s.id}::uuid, ${q.score}::float8, ${JSON.stringify(q.signals)}::jsonb, ${at}::timestamp(3))
      ON CONFLICT ("sessionId") DO UPDATE SET score = EXCLUDED.score, signals = EXCLUDED.signals, "computedAt" = EXCLUDED."computedAt"),
    pq AS (
      INSERT INTO "ParticipantQuality" ("participantId", score, sessions, signals, "computedAt")
      VALUES (${s.participantId}::uuid, ${person.score}::float8, ${person.sessions}::int, ${JSON.stringify(person.counts)}::jsonb, ${at}::timestamp(3))
      ON CONFLICT ("participantId") DO UPDATE SET score = EXCLUDED.score, sessions = EXCLUDED.sessions, signals = EXCLUDED.signals, "computedAt" = EXCLUDED."computedAt")`;
  if (deferWrite) return { flagged: false, write };
  await prisma.$executeRaw`WITH ${write} SELECT 1`;
  return { flagged: false };
}

/** Recomputes one person's score from their sessions' stored signals. */
async function refreshPerson(prisma: PrismaClient, participantId: string): Promise<void> {
  const rows = await prisma.sessionQuality.findMany({
    where: { session: { participantId } },
    select: { signals: true },
  });
  await storePerson(prisma, participantId, personQuality(rows.map((r) => r.signals as unknown as SessionSignals)));
}

async function storePerson(prisma: PrismaClient, participantId: string, q: PersonQuality): Promise<void> {
  const data = {
    score: q.score,
    sessions: q.sessions,
    signals: q.counts as unknown as Prisma.InputJsonObject,
    computedAt: new Date(),
  };
  await prisma.participantQuality.upsert({
    where: { participantId },
    create: { participantId, ...data },
    update: data,
  });
}

export interface ParticipantListing {
  externalId: string;
  displayName: string | null;
  /** Null until the person has an ended session. */
  score: number | null;
  sessions: number;
  signals: Record<SignalName, number>;
  excluded: { by: string; reason: string | null; at: Date } | null;
  banned: boolean;
}

/** People (not simulated collaborators, not deleted), the worst quality first, then those without a score. */
export async function listParticipants(
  prisma: PrismaClient,
  o: { limit?: number } = {},
): Promise<ParticipantListing[]> {
  const rows = await prisma.participant.findMany({
    where: personWhere,
    include: { quality: true, trainingExclusion: true },
  });
  const zero = Object.fromEntries(SIGNAL_NAMES.map((n) => [n, 0])) as Record<SignalName, number>;
  const out = rows.map(
    (p): ParticipantListing => ({
      externalId: p.discordUserId,
      displayName: p.displayName,
      score: p.quality && Number.isFinite(p.quality.score) ? p.quality.score : null,
      sessions: p.quality?.sessions ?? 0,
      signals: { ...zero, ...((p.quality?.signals as Record<SignalName, number> | undefined) ?? {}) },
      excluded: p.trainingExclusion
        ? { by: p.trainingExclusion.excludedBy, reason: p.trainingExclusion.reason, at: p.trainingExclusion.createdAt }
        : null,
      banned: p.banned,
    }),
  );
  out.sort((a, b) => (a.score ?? 2) - (b.score ?? 2) || a.externalId.localeCompare(b.externalId));
  return o.limit !== undefined ? out.slice(0, o.limit) : out;
}

export class QualityError extends Error {
  override name = 'QualityError';
}

/** Leaves every session of the person out of training (they stay, and exports keep them). False when already. */
export async function excludeFromTraining(
  prisma: PrismaClient,
  actor: string,
  externalId: string,
  reason: string | null,
): Promise<boolean> {
  return prisma.$transaction(async (tx) => {
    const p = await tx.participant.findUnique({
      where: { discordUserId: externalId },
      include: { trainingExclusion: true },
    });
    if (!p || p.deletedAt) throw new QualityError(`<@${externalId}> has no data here.`);
    if (p.trainingExclusion) return false;
    await tx.trainingExclusion.create({ data: { participantId: p.id, excludedBy: actor, reason } });
    await tx.auditLog.create({
      data: { actor, action: 'participant.exclude-training', target: externalId, detail: { reason } },
    });
    return true;
  });
}

/** Lets the person's sessions into training again. False when they were not excluded. */
export async function includeInTraining(prisma: PrismaClient, actor: string, externalId: string): Promise<boolean> {
  return prisma.$transaction(async (tx) => {
    const p = await tx.participant.findUnique({
      where: { discordUserId: externalId },
      include: { trainingExclusion: true },
    });
    if (!p?.trainingExclusion) return false;
    await tx.trainingExclusion.delete({ where: { participantId: p.id } });
    await tx.auditLog.create({ data: { actor, action: 'participant.include-training', target: externalId } });
    return true;
  });
}
