// The answer's evaluation and the training reward it implies: the one formula (sessionReward, and rewardSql, the
// same operations in SQL), the evaluation's row and its reading back, and the one statement that stores both
// (prisma/session-store.ts writes the rest of a live session; rating-store.ts recomputes the reward on a rating).
import { randomUUID } from 'node:crypto';
import type { EvaluationOutcome } from '../tasks/scorer.ts';
import { Prisma, type PrismaClient } from './generated/client.ts';
import { asModelError } from './session-store.ts';

/**
 * The training reward of a session: the evaluation's score, or with `ratingWeight` > 0 and a rating,
 * (1 - w) * score + w * (rating - 1) / 4.
 */
export function sessionReward(score: number, rating: number | null | undefined, ratingWeight: number): number {
  if (ratingWeight < 0 || ratingWeight > 1)
    throw new RangeError(`rating weight must be in [0, 1], got ${ratingWeight}`);
  if (rating == null || ratingWeight === 0) return score;
  if (rating < 1 || rating > 5) throw new RangeError(`rating must be in 1..5, got ${rating}`);
  return (1 - ratingWeight) * score + ratingWeight * ((rating - 1) / 4);
}

export function evaluationData(outcome: EvaluationOutcome): Omit<Prisma.EvaluationUncheckedCreateInput, 'sessionId'> {
  return {
    score: outcome.score,
    success: outcome.success,
    testsPassed: outcome.testsPassed ?? null,
    testsTotal: outcome.testsTotal ?? null,
    detail: (outcome.detail ?? {}) as Prisma.InputJsonValue,
    metric: outcome.metric ?? null,
    evaluatorVersion: outcome.evaluatorVersion,
  };
}

/** The stored evaluation as the scorer's outcome (for showing it again). */
export function outcomeOf(e: {
  score: number;
  success: boolean;
  detail: unknown;
  evaluatorVersion: string;
  testsPassed: number | null;
  testsTotal: number | null;
  metric: string | null;
}): EvaluationOutcome {
  const outcome: EvaluationOutcome = {
    score: e.score,
    success: e.success,
    detail: e.detail as EvaluationOutcome['detail'],
    evaluatorVersion: e.evaluatorVersion,
  };
  if (e.testsPassed !== null) outcome.testsPassed = e.testsPassed;
  if (e.testsTotal !== null) outcome.testsTotal = e.testsTotal;
  if (e.metric !== null) outcome.metric = e.metric;
  return outcome;
}

/**
 * The reward as sessionReward computes it, in SQL over `score` and `rating` (float8 and int expressions; a null
 * rating or a zero weight gives the score): the same operations in the same order, so the same double.
 */
export function rewardSql(score: Prisma.Sql, rating: Prisma.Sql, ratingWeight: number): Prisma.Sql {
  sessionReward(0, null, ratingWeight); // the weight's range check
  if (ratingWeight === 0) return score;
  return Prisma.sql`CASE WHEN ${rating} IS NULL THEN ${score} ELSE (1 - ${ratingWeight}::float8) * ${score} + ${ratingWeight}::float8 * ((${rating}::float8 - 1) / 4) END`;
}

/**
 * Stores the answer's evaluation and the reward it implies (with the session's first rating, if any), in one
 * statement (the transaction it replaces took five round trips: bench:bot, bench/RESULTS.md). A second evaluation of the
 * same answer fails on its unique index as before (P2002).
 */
export async function recordEvaluation(
  prisma: PrismaClient,
  sessionId: string,
  outcome: EvaluationOutcome,
  ratingWeight: number,
): Promise<StudyCompletion> {
  const e = evaluationData(outcome);
  const firstRating = Prisma.sql`(SELECT value FROM "Rating" WHERE "sessionId" = ${sessionId}::uuid ORDER BY "createdAt" ASC LIMIT 1)`;
  // The study's completion code comes back with it (what the person is shown with the result: bot/session/answers.ts).
  const [row] = await prisma.$queryRaw<StudyCompletion[]>`
    WITH e AS (
      INSERT INTO "Evaluation" (id, "sessionId", score, success, "testsPassed", "testsTotal", detail, metric, "evaluatorVersion", "createdAt")
      VALUES (${randomUUID()}::uuid, ${sessionId}::uuid, ${e.score}::float8, ${e.success}::boolean, ${e.testsPassed ?? null}::int, ${e.testsTotal ?? null}::int,
        ${JSON.stringify(e.detail)}::jsonb, ${e.metric ?? null}, ${e.evaluatorVersion}, ${new Date()}::timestamp(3))
      RETURNING "sessionId"),
    u AS (
      UPDATE "Session" SET reward = ${rewardSql(Prisma.sql`${e.score}::float8`, firstRating, ratingWeight)}
      WHERE id = (SELECT "sessionId" FROM e) RETURNING "studyId", "participantId")
    SELECT st."completionCode", st."maxSessionsPerPerson",
      CASE WHEN st."completionCode" IS NULL OR st."maxSessionsPerPerson" IS NULL THEN 0
        ELSE (SELECT count(*)::int FROM "Session" x
          WHERE x."studyId" = u."studyId" AND x."participantId" = u."participantId" AND x.status = 'answered') END AS answered
    FROM u LEFT JOIN "Study" st ON st.id = u."studyId"`.catch(asModelError('Evaluation'));
  return row ?? { completionCode: null, maxSessionsPerPerson: null, answered: 0 };
}

/** What says whether an answered session earns its study's completion code: the code, the cap, the person's answered sessions there (counted only under a cap). */
export interface StudyCompletion {
  completionCode: string | null;
  maxSessionsPerPerson: number | null;
  answered: number;
}
