// The only code that writes a live session's life: creating it, appending agent and human turns (the answer's
// evaluation and the reward: evaluation-store.ts; the rating: rating-store.ts; whole simulated or imported games:
// finished-session-store.ts, with this module's row builders). The bot's engine (Discord and console), simulated
// games and imported trajectories all write through these, so every counter has one meaning and the reward one
// formula:
// - Session.turnCount counts agent messages (ColBench's turns, at most 10); human replies do not count.
// - reward = the evaluation's score, blended with the 1-5 rating when a rating weight is configured
//   (evaluation-store.ts sessionReward). Recomputed whenever the evaluation or the rating changes.
// Each function takes a client or a transaction and does its writes atomically when given a client (one statement,
// or a transaction of its own), so a caller that retries on a lost connection never half-writes. The writes of a
// live turn (the appends, the evaluation, the rating) are one statement each where they can be: every round trip
// counts when hundreds of people play at once (bench:bot, bench/RESULTS.md).
import { recordActiveTimes } from './active-time-store.ts';
import { MOMENTS, activeMsOf } from './study-stats.ts';
import type { TaskContent, TaskKind } from '../tasks/model.ts';
import type { CompletionTokens, TurnProvenance } from '../tasks/agent.ts';
import { sanitizeText, type EndReason } from '../tasks/protocol.ts';
import { randomUUID } from 'node:crypto';
import { Prisma, type PrismaClient, type Session, type Turn } from './generated/client.ts';
import { taskContent } from './task-store.ts';

type Tx = Prisma.TransactionClient;

export interface NewSession {
  taskId: string;
  participantId: string;
  policyVersionId: string | null;
  /** 'discord' | 'console' | 'simulated' | 'imported'. */
  channel: string;
  simulated: boolean;
  guildId?: string | null;
  channelId?: string | null;
  /** The A/B period of its study the session was assigned in (bot/assign.ts); its arm is the version playing it. */
  experimentId?: string | null;
  /** A gold check: the finished session whose agent side is replayed (bot/gold.ts). */
  goldSourceId?: string | null;
  /** The study the session was assigned in (bot/assign.ts). */
  studyId?: string | null;
  /** The version of the study's consent text the person had accepted (null: the study has none of its own). */
  consentVersion?: number | null;
}

/** Creates the session (one round trip: its task is not read with it, the engine keeps tasks in memory). */
export async function createSession(prisma: PrismaClient | Tx, s: NewSession): Promise<Session> {
  return prisma.session.create({
    data: {
      taskId: s.taskId,
      participantId: s.participantId,
      policyVersionId: s.policyVersionId,
      channel: s.channel,
      simulated: s.simulated,
      guildId: s.guildId ?? null,
      channelId: s.channelId ?? null,
      experimentId: s.experimentId ?? null,
      goldSourceId: s.goldSourceId ?? null,
      studyId: s.studyId ?? null,
      consentVersion: s.consentVersion ?? null,
    },
  });
}

export interface AgentTurnInput {
  /** What the person is shown (after the protocol's checks). */
  content: string;
  /** The model's untouched output. */
  rawOutput: string;
  latencyMs?: number | null;
  promptTokens?: number | null;
  completionTokens?: number | null;
  provenance?: TurnProvenance | null;
  externalMessageId?: string | null;
}

export interface HumanTurnInput {
  content: string;
  /** The channel's id of the message (Discord message id): a redelivery is refused by the unique index. */
  externalMessageId?: string | null;
}

/** The agent's message ended the session: its answer and why it ended (tasks/protocol.ts endReasonOf). */
export interface AnswerInput {
  answer: string;
  endReason: EndReason;
}

/**
 * Postgres text and JSONB cannot hold NUL, which a byte-level model can emit (in its text, its logprob tokens,
 * or a prompt that quotes it): every string is stored with NUL as U+FFFD, as the turn's content is.
 */
function jsonSafe(value: unknown): unknown {
  if (typeof value === 'string') return sanitizeText(value);
  if (Array.isArray(value)) return value.map(jsonSafe);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonSafe(v)]));
  return value;
}

export function agentTurnData(sessionId: string, index: number, t: AgentTurnInput): Prisma.TurnUncheckedCreateInput {
  return {
    sessionId,
    index,
    role: 'agent',
    content: sanitizeText(t.content),
    rawOutput: sanitizeText(t.rawOutput),
    latencyMs: t.latencyMs ?? null,
    promptTokens: t.promptTokens ?? null,
    completionTokens: t.completionTokens ?? null,
    // Recorded tokens go to their own row (turnTokensOf), stored once: the provenance keeps only that they were
    // recorded, not its per-token logprobs, which hold the same log-probabilities (and, from a server asked for
    // ids, the same ids as "token_id:<id>").
    ...(t.provenance
      ? {
          provenance: jsonSafe(
            typeof t.provenance.tokens === 'object'
              ? { ...t.provenance, tokens: 'recorded', logprobs: null }
              : t.provenance,
          ) as Prisma.InputJsonObject,
        }
      : {}),
    externalMessageId: t.externalMessageId ?? null,
  };
}

/** The agent turn's exact tokens, when its provenance carries them. */
export function turnTokensOf(t: Pick<AgentTurnInput, 'provenance'>): CompletionTokens | null {
  const tokens = t.provenance?.tokens;
  return typeof tokens === 'object' ? tokens : null;
}

/**
 * Inserts a turn at the session's next index and records the session's activity, in ONE statement (one round
 * trip; the transaction of a read, an insert and an update it replaces took five: bench:bot, bench/RESULTS.md). The
 * index is read in the statement, so it is the session's own at the write whoever appended before. Null when the
 * session does not exist (deleted meanwhile) or is no longer active (ended meanwhile: the bot keeps sessions in
 * memory between writes, bot/session/session-cache.ts, and learns of it here); a second turn with the same external id, or the same index written
 * at once by another process, fails on the unique indexes as before.
 */
async function insertTurn(
  prisma: PrismaClient | Tx,
  sessionId: string,
  t: Prisma.TurnUncheckedCreateInput,
  session: Prisma.Sql,
): Promise<Turn | null> {
  const rows = await prisma.$queryRaw<Turn[]>`
    WITH s AS (UPDATE "Session" SET ${session} WHERE id = ${sessionId}::uuid AND status = 'active' RETURNING id)
    ${turnInsert(t)}
    RETURNING *`.catch(asModelError('Turn'));
  return rows[0] ?? null;
}

/** The INSERT of insertTurn, from its CTE `s` (the session updated): the index read in the statement. */
function turnInsert(t: Prisma.TurnUncheckedCreateInput): Prisma.Sql {
  return Prisma.sql`
    INSERT INTO "Turn" (id, "sessionId", index, role, content, "rawOutput", "promptTokens", "completionTokens", "latencyMs", provenance, "externalMessageId", "createdAt")
    SELECT ${randomUUID()}::uuid, s.id, (SELECT coalesce(max(index) + 1, 0) FROM "Turn" WHERE "sessionId" = s.id), ${t.role}::"TurnRole", ${t.content},
      ${t.rawOutput ?? null}, ${t.promptTokens ?? null}::int, ${t.completionTokens ?? null}::int, ${t.latencyMs ?? null}::int,
      ${t.provenance === undefined ? null : JSON.stringify(t.provenance)}::jsonb, ${t.externalMessageId ?? null}, ${new Date()}::timestamp(3)
    FROM s`;
}

/**
 * insertTurn for the turn that ends the session, which also records its active time (prisma/active-time-store.ts):
 * the statement returns the session's moments before it (its start, its earlier turns, its end as written; the
 * statement does not see its own insert), the turn's own is added here, and the time is written by a second
 * statement. A process killed between the two leaves it unset, as for a session that ended before the column
 * existed: bot/bootstrap.ts fills those at the next start. Two round trips: the transaction they replace took five.
 */
async function insertLastTurn(
  prisma: PrismaClient,
  sessionId: string,
  t: Prisma.TurnUncheckedCreateInput,
  session: Prisma.Sql,
): Promise<Turn | null> {
  const rows = await prisma.$queryRaw<(Turn & { moments: string })[]>`
    WITH s AS (UPDATE "Session" SET ${session} WHERE id = ${sessionId}::uuid AND status = 'active' RETURNING id, "startedAt", "endedAt"),
    t AS (${turnInsert(t)} RETURNING *)
    SELECT t.*, ${MOMENTS} AS moments FROM t, s`.catch(asModelError('Turn'));
  const row = rows[0];
  if (!row) return null;
  const { moments, ...turn } = row;
  const ms = activeMsOf(`${moments},${turn.createdAt.getTime()}`);
  await prisma.session.updateMany({ where: { id: sessionId }, data: { activeMs: ms } });
  return turn;
}

/**
 * A raw statement's unique or foreign-key violation (P2010) as the P2002 or P2003 of the model call it replaced,
 * with the same meta, so callers (prisma/errors.ts toDatabaseError: a redelivered message's external id, a score
 * stored first elsewhere) read it as they did.
 */
export function asModelError(modelName: string): (err: unknown) => never {
  return (err) => {
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2010') {
      const cause = (err.meta?.driverAdapterError as { cause?: { kind?: string; originalCode?: string } } | undefined)
        ?.cause;
      const code =
        cause?.kind === 'UniqueConstraintViolation' || cause?.originalCode === '23505'
          ? 'P2002'
          : cause?.kind === 'ForeignKeyConstraintViolation' || cause?.originalCode === '23503'
            ? 'P2003'
            : null;
      if (code)
        throw new Prisma.PrismaClientKnownRequestError(err.message, {
          code,
          clientVersion: err.clientVersion,
          meta: { ...err.meta, modelName },
        });
    }
    throw err;
  };
}

/** The error a write to a missing session gave before turns were one statement (callers check for it by code). */
function sessionGone(sessionId: string): Error {
  return new Prisma.PrismaClientKnownRequestError(`No Session found with id ${sessionId}`, {
    code: 'P2025',
    clientVersion: Prisma.prismaVersion.client,
  });
}

/** Appends an agent turn (and, when it answered, closes the session with its answer). */
export async function appendAgentTurn(
  prisma: PrismaClient,
  sessionId: string,
  t: AgentTurnInput,
  answered?: AnswerInput,
  at = new Date(),
): Promise<Turn> {
  const data = agentTurnData(sessionId, 0, t);
  const session = answered
    ? Prisma.sql`"turnCount" = "turnCount" + 1, "lastActivityAt" = ${at}::timestamp(3), status = 'answered', answer = ${answered.answer}, "endedAt" = ${at}::timestamp(3), "endReason" = ${answered.endReason}`
    : Prisma.sql`"turnCount" = "turnCount" + 1, "lastActivityAt" = ${at}::timestamp(3)`;
  const tokens = turnTokensOf(t);
  // Recorded tokens are written with the turn: a transaction only then (and the answer's active time in it).
  const turn = !tokens
    ? answered
      ? await insertLastTurn(prisma, sessionId, data, session)
      : await insertTurn(prisma, sessionId, data, session)
    : await prisma.$transaction(async (tx) => {
        const turn = await insertTurn(tx, sessionId, data, session);
        if (turn && tokens)
          await tx.turnTokens.create({
            data: {
              turnId: turn.id,
              ids: tokens.ids,
              logprobs: tokens.logprobs,
              weightsVersion: tokens.weightsVersion,
            },
          });
        if (turn && answered) await recordActiveTimes(tx, [sessionId]);
        return turn;
      });
  if (!turn) throw sessionGone(sessionId);
  return turn;
}

/** Appends the collaborator's reply. */
export async function appendHumanTurn(
  prisma: PrismaClient,
  sessionId: string,
  t: HumanTurnInput,
  at = new Date(),
): Promise<Turn> {
  const turn = await insertTurn(
    prisma,
    sessionId,
    { sessionId, index: 0, role: 'human', content: t.content, externalMessageId: t.externalMessageId ?? null },
    Prisma.sql`"lastActivityAt" = ${at}::timestamp(3)`,
  );
  if (!turn) throw sessionGone(sessionId);
  return turn;
}

/** Records where the session is shown (its Discord thread). */
export async function attachThread(prisma: PrismaClient, sessionId: string, threadId: string): Promise<void> {
  await prisma.session.update({ where: { id: sessionId }, data: { threadId } });
}

/** Records the channel's id of the message that showed an agent turn (it has reached the person). */
export async function markTurnShown(prisma: PrismaClient, turnId: string, externalMessageId: string): Promise<void> {
  // updateMany: a turn deleted meanwhile (/privacy delete) is nothing to record, not an error.
  await prisma.turn.updateMany({ where: { id: turnId }, data: { externalMessageId } });
}

/** Records that the answer's result reached the person (a restart shows it again only when this is unset). */
export async function markResultShown(prisma: PrismaClient, sessionId: string, at = new Date()): Promise<void> {
  await prisma.session.updateMany({ where: { id: sessionId, resultShownAt: null }, data: { resultShownAt: at } });
}

/**
 * Records that the result and the rating prompt reached the person in one message (one write for both); `with`:
 * common table expressions written in the same statement (the session's quality: prisma/quality-store.ts).
 */
export async function markResultAndRatingShown(
  prisma: PrismaClient,
  sessionId: string,
  at = new Date(),
  with_?: Prisma.Sql,
): Promise<void> {
  await prisma.$executeRaw`${with_ ? Prisma.sql`WITH ${with_}` : Prisma.empty}
    UPDATE "Session" SET "resultShownAt" = ${at}::timestamp(3), "ratingAskedAt" = ${at}::timestamp(3)
    WHERE id = ${sessionId}::uuid AND "resultShownAt" IS NULL AND "ratingAskedAt" IS NULL`;
}

/** Records that the rating prompt reached the person. */
export async function markRatingAsked(prisma: PrismaClient, sessionId: string, at = new Date()): Promise<void> {
  await prisma.session.updateMany({ where: { id: sessionId, ratingAskedAt: null }, data: { ratingAskedAt: at } });
}

/** Ends an active session without an answer ('abandoned' or 'expired'); false when it was no longer active. */
export async function endSession(
  prisma: PrismaClient,
  sessionId: string,
  status: 'abandoned' | 'expired',
  endReason: string,
  at = new Date(),
  onlyIfIdleSince?: Date,
): Promise<boolean> {
  const r = await prisma.session.updateMany({
    where: { id: sessionId, status: 'active', ...(onlyIfIdleSince ? { lastActivityAt: { lt: onlyIfIdleSince } } : {}) },
    data: { status, endedAt: at, endReason: endReason.slice(0, 500) },
  });
  if (r.count === 1) await recordActiveTimes(prisma, [sessionId]);
  return r.count === 1;
}

export type { TaskContent, TaskKind };
export { taskContent };
