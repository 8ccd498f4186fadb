// A person's own participant row: found by their channel id, and written when they accept the consent text.
// Nobody's session is recorded before that acceptance (bot/session/admission.ts checks it).
import { randomUUID } from 'node:crypto';
import { Prisma, type Participant, type PrismaClient } from './generated/client.ts';

export async function findParticipant(prisma: PrismaClient, externalId: string): Promise<Participant | null> {
  return prisma.participant.findUnique({ where: { discordUserId: externalId } });
}

/** Several people's rows in one query (by channel id; those without a row are left out of the map). */
export async function findParticipants(
  prisma: PrismaClient,
  externalIds: readonly string[],
): Promise<Map<string, Participant>> {
  const rows = await prisma.participant.findMany({ where: { discordUserId: { in: [...new Set(externalIds)] } } });
  return new Map(rows.map((r) => [r.discordUserId, r]));
}

/**
 * findParticipants, and the settings of `keys`, in one statement (an admission reads both: bot/session/directory.ts;
 * two round trips were two of the pool's connections at once for every /task start).
 */
export async function findParticipantsAndSettings(
  prisma: PrismaClient,
  externalIds: readonly string[],
  keys: readonly string[],
): Promise<{ people: Map<string, Participant>; settings: { key: string; value: unknown }[] }> {
  const rows = await prisma.$queryRaw<(Participant & { __settings: { key: string; value: unknown }[] | null })[]>`
    SELECT p.*, (SELECT json_agg(json_build_object('key', st.key, 'value', st.value)) FROM "Setting" st
      WHERE st.key = ANY(${[...keys]}::text[])) AS "__settings"
    FROM (SELECT 1) one LEFT JOIN "Participant" p ON p."discordUserId" = ANY(${[...new Set(externalIds)]}::text[])`;
  const people = new Map<string, Participant>();
  for (const { __settings, ...p } of rows) if (p.id !== null) people.set(p.discordUserId, p);
  return { people, settings: rows[0]?.__settings ?? [] };
}

/**
 * The settings of `keys` and the person's running session (its id, or null), in one statement: what a session's
 * start reads under its study's lock (bot/session/admission.ts).
 */
export async function settingsAndActiveSession(
  prisma: PrismaClient | Prisma.TransactionClient,
  participantId: string,
  keys: readonly string[],
): Promise<{ settings: { key: string; value: unknown }[]; activeSessionId: string | null }> {
  const [row] = await prisma.$queryRaw<{ settings: { key: string; value: unknown }[] | null; active: string | null }[]>`
    SELECT (SELECT json_agg(json_build_object('key', st.key, 'value', st.value)) FROM "Setting" st
        WHERE st.key = ANY(${[...keys]}::text[])) AS settings,
      (SELECT s.id::text FROM "Session" s WHERE s."participantId" = ${participantId}::uuid AND s.status = 'active'
        LIMIT 1) AS active`;
  return { settings: row?.settings ?? [], activeSessionId: row?.active ?? null };
}

/**
 * Records the acceptance (again, after a withdrawal or a deletion), creating the row on first contact; with
 * `auditRow` (moderation-store.ts auditInsert), its audit row in the same statement (one round trip, and no
 * acceptance without its audit row).
 */
export async function acceptConsent(
  prisma: PrismaClient | Prisma.TransactionClient,
  externalId: string,
  displayName: string | null,
  auditRow?: Prisma.Sql,
): Promise<Participant> {
  const now = new Date();
  const upsert = Prisma.sql`
    INSERT INTO "Participant" (id, "discordUserId", "displayName", "consentGivenAt", "updatedAt")
    VALUES (${randomUUID()}::uuid, ${externalId}, ${displayName}, ${now}::timestamp(3), ${now}::timestamp(3))
    ON CONFLICT ("discordUserId") DO UPDATE SET "consentGivenAt" = EXCLUDED."consentGivenAt",
      "consentWithdrawnAt" = NULL, "deletedAt" = NULL, "updatedAt" = EXCLUDED."updatedAt",
      "displayName" = COALESCE(NULLIF(EXCLUDED."displayName", ''), "Participant"."displayName")
    RETURNING *`;
  const rows = await prisma.$queryRaw<Participant[]>(
    auditRow ? Prisma.sql`WITH p AS (${upsert}), a AS (${auditRow}) SELECT * FROM p` : upsert,
  );
  return rows[0]!;
}
