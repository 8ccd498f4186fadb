// One session of a study as its time, pay and progress see it, without any text: who played it, its outcome,
// agent turns, active time (tasks/study-pay.ts activeMs over its start, each turn and its end), whether the answer
// succeeded, and the person's rating. Read by bot/study-progress.ts and bot/study-payouts.ts, and by the erasure
// (prisma/privacy-store.ts), which keeps what payouts need of the sessions it deletes.
import type { Prisma, PrismaClient, SessionStatus } from './generated/client.ts';
import { activeMs } from '../tasks/study-pay.ts';

type Tx = Prisma.TransactionClient;

export interface SessionSummary {
  id: string;
  participantId: string;
  /** The person's platform id (their Discord id; "console:<name>" for the console). */
  externalId: string;
  taskId: string;
  studyId: string | null;
  policyVersionId: string | null;
  status: SessionStatus;
  startedAt: Date;
  endedAt: Date | null;
  /** Agent messages. */
  turns: number;
  activeMs: number;
  /** Whether the answer succeeded; null before it was scored, or without an answer. */
  success: boolean | null;
  /** The person's own 1-5 rating of the session; null when they gave none. */
  rating: number | null;
  reward: number | null;
}

/** Summaries of the sessions `where` selects, oldest first. */
export async function sessionSummaries(
  prisma: PrismaClient | Tx,
  where: Prisma.SessionWhereInput,
): Promise<SessionSummary[]> {
  const rows = await prisma.session.findMany({
    where,
    orderBy: [{ startedAt: 'asc' }, { id: 'asc' }],
    select: {
      id: true,
      participantId: true,
      taskId: true,
      studyId: true,
      policyVersionId: true,
      status: true,
      startedAt: true,
      endedAt: true,
      turnCount: true,
      reward: true,
      participant: { select: { discordUserId: true } },
      evaluation: { select: { success: true } },
      ratings: { select: { raterId: true, value: true } },
    },
  });
  // Turn times in one plain query: loading them as a relation made Prisma build an object per turn, the most of
  // the time of a study's progress and pay at 100,000 sessions (bench/RESULTS.md, Dashboard).
  const times = new Map<string, Date[]>();
  if (rows.length) {
    const turns = await prisma.$queryRaw<
      { sessionId: string; createdAt: Date }[]
    >`SELECT "sessionId", "createdAt" FROM "Turn" WHERE "sessionId" = ANY(${rows.map((r) => r.id)}::uuid[])`;
    for (const t of turns) {
      const list = times.get(t.sessionId);
      if (list) list.push(t.createdAt);
      else times.set(t.sessionId, [t.createdAt]);
    }
  }
  return rows.map((s) => ({
    id: s.id,
    participantId: s.participantId,
    externalId: s.participant.discordUserId,
    taskId: s.taskId,
    studyId: s.studyId,
    policyVersionId: s.policyVersionId,
    status: s.status,
    startedAt: s.startedAt,
    endedAt: s.endedAt,
    turns: s.turnCount,
    activeMs: activeMs([s.startedAt, ...(times.get(s.id) ?? []), ...(s.endedAt ? [s.endedAt] : [])]),
    success: s.evaluation?.success ?? null,
    rating: s.ratings.find((r) => r.raterId === s.participantId)?.value ?? null,
    reward: s.reward,
  }));
}
