// The training data: finished sessions read back from the database as trajectories with a reward.
// Only data that may be used leaves here: consented, not withdrawn, not deleted, not banned, not flagged.
import type { PrismaClient } from '../prisma/generated/client.ts';
import type { Prisma } from '../prisma/generated/client.ts';
import type { DialogueTurn } from '../tasks/protocol.ts';
import type { TaskContent, TaskKind, TaskSplit } from '../tasks/model.ts';
import { sessionReward } from '../prisma/session-store.ts';
import { taskContent } from '../prisma/task-store.ts';

export interface Trajectory {
  sessionId: string;
  taskId: string;
  task: TaskContent;
  /** Agent and human messages in order, agent first (system notices dropped). */
  turns: DialogueTurn[];
  answer: string;
  /** The evaluation's score (fraction of tests passed, or similarity). */
  score: number;
  success: boolean;
  /** Mean human rating (1-5) when the session was rated. */
  rating: number | null;
  /** What training optimises: the score, blended with the rating when so configured. */
  reward: number;
  simulated: boolean;
  policyVersionId: string | null;
}

export interface TrajectoryQuery {
  /** Weight of the human rating in the reward (0: the score alone). */
  ratingWeight: number;
  includeSimulated: boolean;
  kind?: TaskKind;
  split?: TaskSplit;
  /** Only sessions that ended after this moment (the trainer's "new data" window). */
  endedAfter?: Date;
  /** Exactly these sessions (a run's data snapshot, for resuming with the same data). */
  sessionIds?: string[];
}

/** The where-clause every training read shares: only finished, evaluated, usable sessions. */
export function usableSessions(q: Omit<TrajectoryQuery, 'ratingWeight'>): Prisma.SessionWhereInput {
  const where: Prisma.SessionWhereInput = {
    status: 'answered',
    evaluation: { isNot: null },
    flags: { none: { resolvedAt: null } },
    participant: {
      deletedAt: null,
      banned: false,
      OR: [{ role: 'simulated' }, { consentGivenAt: { not: null }, consentWithdrawnAt: null }],
    },
  };
  if (!q.includeSimulated) where.simulated = false;
  if (q.kind || q.split) where.task = { ...(q.kind ? { kind: q.kind } : {}), ...(q.split ? { split: q.split } : {}) };
  if (q.endedAfter) where.endedAt = { gt: q.endedAfter };
  if (q.sessionIds) where.id = { in: q.sessionIds };
  return where;
}

export async function loadTrajectories(prisma: PrismaClient, q: TrajectoryQuery): Promise<Trajectory[]> {
  const sessions = await prisma.session.findMany({
    where: usableSessions(q),
    orderBy: [{ endedAt: 'asc' }, { id: 'asc' }],
    include: {
      task: true,
      evaluation: true,
      ratings: { select: { value: true } },
      turns: { where: { role: { in: ['agent', 'human'] } }, orderBy: { index: 'asc' }, select: { role: true, content: true } },
    },
  });
  const out: Trajectory[] = [];
  for (const s of sessions) {
    const evaluation = s.evaluation!;
    const rating = s.ratings.length ? s.ratings.reduce((a, r) => a + r.value, 0) / s.ratings.length : null;
    out.push({
      sessionId: s.id,
      taskId: s.taskId,
      task: taskContent(s.task),
      turns: s.turns.map((t) => ({ role: t.role as 'agent' | 'human', content: t.content })),
      answer: s.answer ?? '',
      score: evaluation.score,
      success: evaluation.success,
      rating,
      reward: sessionReward(evaluation.score, rating, q.ratingWeight),
      simulated: s.simulated,
      policyVersionId: s.policyVersionId,
    });
  }
  return out;
}

/** A stored task row as the protocol and evaluators take it. */
