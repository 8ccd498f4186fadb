// The person's rating of an answered session and its comment, and the reward the rating implies (evaluation-store.ts
// sessionReward, written by its rewardSql): each a single statement, since ratings arrive in bursts when hundreds
// of people finish at once (bench:bot).
import { randomUUID } from 'node:crypto';
import { Prisma, type PrismaClient } from './generated/client.ts';
import { asModelError } from './session-store.ts';
import { rewardSql } from './evaluation-store.ts';

/**
 * Stores (or replaces) a 1-5 rating and recomputes the reward when the session is evaluated, in one statement
 * (the transaction it replaces took five round trips).
 */
export async function recordRating(
  prisma: PrismaClient,
  sessionId: string,
  raterId: string,
  value: number,
  ratingWeight: number,
): Promise<void> {
  await prisma.$executeRaw`
    WITH ${ratingWrite(Prisma.sql`SELECT ${sessionId}::uuid, ${raterId}::uuid`, value, ratingWeight)}
    SELECT 1`.catch(asModelError('Rating'));
}

/**
 * recordRating of the session's own person, rated by `externalId` (their Discord id), only once it is answered,
 * with what it was checked against, in one statement (a read of the session and of its person took two more
 * round trips): null when the session does not exist; nothing is written unless `owner` is `externalId` and
 * `status` is 'answered'.
 */
export async function rateOwnSession(
  prisma: PrismaClient,
  sessionId: string,
  externalId: string,
  value: number,
  ratingWeight: number,
): Promise<{ owner: string; status: string } | null> {
  const rows = await prisma.$queryRaw<{ owner: string; status: string }[]>`
    WITH o AS (
      SELECT s.id, s."participantId", s.status::text AS status, p."discordUserId" AS owner
      FROM "Session" s JOIN "Participant" p ON p.id = s."participantId" WHERE s.id = ${sessionId}::uuid),
    ${ratingWrite(Prisma.sql`SELECT o.id, o."participantId" FROM o WHERE o.owner = ${externalId} AND o.status = 'answered'`, value, ratingWeight)}
    SELECT owner, status FROM o`.catch(asModelError('Rating'));
  return rows[0] ?? null;
}

/** The CTEs of a rating's write: the rating of each (session, rater) row of `source`, then the reward it implies. */
function ratingWrite(source: Prisma.Sql, value: number, ratingWeight: number): Prisma.Sql {
  if (!Number.isInteger(value) || value < 1 || value > 5)
    throw new RangeError(`a rating is a whole number from 1 to 5, got ${value}`);
  return Prisma.sql`
    r AS (
      INSERT INTO "Rating" (id, "sessionId", "raterId", value, "createdAt")
      SELECT ${randomUUID()}::uuid, src.*, ${value}::int, ${new Date()}::timestamp(3) FROM (${source}) src
      ON CONFLICT ("sessionId", "raterId") DO UPDATE SET value = EXCLUDED.value
      RETURNING "sessionId"),
    w AS (
      UPDATE "Session" s SET reward = ${rewardSql(Prisma.sql`e.score`, Prisma.sql`${value}::int`, ratingWeight)}
      FROM "Evaluation" e
      WHERE s.id = (SELECT "sessionId" FROM r) AND e."sessionId" = s.id)`;
}

/** Adds (or clears, with an empty text) the comment of an existing rating; false when there is no rating. */
export async function recordComment(
  prisma: PrismaClient,
  sessionId: string,
  raterId: string,
  comment: string,
): Promise<boolean> {
  const updated = await prisma.rating.updateMany({ where: { sessionId, raterId }, data: { comment: comment || null } });
  return updated.count > 0;
}
