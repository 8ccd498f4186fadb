// The only writer of DashboardToken and CriticAdvantage: the dashboard's access tokens (only a hash of each
// secret is kept; bot/dashboard/access.ts makes and checks them) and the critic's per-turn advantages a
// SWEET-RL run stored for the sessions it scored (shown on the dashboard's session page). Every token change
// writes its audit row in the same transaction.
import type { PrismaClient } from './generated/client.ts';
import { audit } from './moderation-store.ts';

export type DashboardRole = 'operator' | 'moderator';

export interface DashboardTokenRow {
  id: string;
  role: DashboardRole;
  guildId: string | null;
  prefix: string;
  createdBy: string;
  createdAt: Date;
  revokedAt: Date | null;
}

export class DashboardTokenError extends Error {}

const asRow = (t: {
  id: string;
  role: string;
  guildId: string | null;
  prefix: string;
  createdBy: string;
  createdAt: Date;
  revokedAt: Date | null;
}): DashboardTokenRow => ({
  ...t,
  role: t.role === 'operator' ? 'operator' : 'moderator',
});

/** Stores a new token by the sha256 of its secret (the secret itself is never stored). */
export async function createDashboardToken(
  prisma: PrismaClient,
  actor: string,
  t: { role: DashboardRole; guildId: string | null; tokenSha256: string; prefix: string },
): Promise<DashboardTokenRow> {
  if (t.role === 'moderator' && !t.guildId)
    throw new DashboardTokenError('a moderator token needs --guild ID: a moderator sees one guild');
  if (t.role === 'operator' && t.guildId)
    throw new DashboardTokenError('an operator token sees every guild: leave out --guild');
  return prisma.$transaction(async (tx) => {
    const row = await tx.dashboardToken.create({
      data: { role: t.role, guildId: t.guildId, tokenSha256: t.tokenSha256, prefix: t.prefix, createdBy: actor },
    });
    await audit(tx, actor, 'dashboard.token.create', row.id, { role: t.role, guildId: t.guildId, prefix: t.prefix });
    return asRow(row);
  });
}

/** Ends a token, named by its id or the prefix `token list` shows. False when no live token matches. */
export async function revokeDashboardToken(prisma: PrismaClient, actor: string, idOrPrefix: string): Promise<boolean> {
  return prisma.$transaction(async (tx) => {
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(idOrPrefix);
    const live = await tx.dashboardToken.findMany({
      where: { revokedAt: null, ...(uuid ? { id: idOrPrefix } : { prefix: idOrPrefix }) },
    });
    if (live.length > 1)
      throw new DashboardTokenError(
        `${live.length} live tokens start with "${idOrPrefix}": name one by its id (sweetloop dashboard token list)`,
      );
    if (live.length === 0) return false;
    await tx.dashboardToken.update({ where: { id: live[0]!.id }, data: { revokedAt: new Date() } });
    await audit(tx, actor, 'dashboard.token.revoke', live[0]!.id, { prefix: live[0]!.prefix });
    return true;
  });
}

export async function listDashboardTokens(prisma: PrismaClient): Promise<DashboardTokenRow[]> {
  return (await prisma.dashboardToken.findMany({ orderBy: { createdAt: 'asc' } })).map(asRow);
}

/** The live token with this hash, if any. */
export async function liveDashboardToken(prisma: PrismaClient, tokenSha256: string): Promise<DashboardTokenRow | null> {
  const t = await prisma.dashboardToken.findUnique({ where: { tokenSha256 } });
  return t && !t.revokedAt ? asRow(t) : null;
}

export async function liveDashboardTokenCount(prisma: PrismaClient): Promise<number> {
  return prisma.dashboardToken.count({ where: { revokedAt: null } });
}

/** A dashboard write's audit row (the write itself goes through its own store). */
export async function auditDashboardAction(
  prisma: PrismaClient,
  actor: { id: string; guildId: string | null },
  action: string,
  target: string | null,
  detail?: Record<string, string | number | boolean | null>,
): Promise<void> {
  await audit(prisma, actor, action, target, detail);
}

/**
 * A run's critic advantages for agent turns (by turn id). Written again when a resumed run scores the same turn.
 */
export async function saveCriticAdvantages(
  prisma: PrismaClient,
  trainingRunId: string,
  rows: readonly { turnId: string; advantage: number }[],
): Promise<number> {
  for (const r of rows)
    if (!Number.isFinite(r.advantage))
      throw new RangeError(`critic advantage of turn ${r.turnId} is not a finite number`);
  await prisma.$transaction(async (tx) => {
    await tx.criticAdvantage.deleteMany({ where: { trainingRunId, turnId: { in: rows.map((r) => r.turnId) } } });
    await tx.criticAdvantage.createMany({
      data: rows.map((r) => ({ trainingRunId, turnId: r.turnId, advantage: r.advantage })),
    });
  });
  return rows.length;
}

/**
 * A run's critic advantages given per session as the advantages of its agent turns in order (the critic reads the
 * dialogue without system notices). A dialogue longer than the critic's window loses its oldest tokens, and with
 * them its oldest turns (trainer/sequences.ts encodeDialogue): the advantages are those of the session's last agent
 * turns, and are matched from the end. A session with more advantages than agent turns is skipped (nothing to
 * match). Returns how many turns were stored and how many sessions were skipped.
 */
export async function saveSessionAdvantages(
  prisma: PrismaClient,
  trainingRunId: string,
  sessions: readonly { sessionId: string; advantages: readonly number[] }[],
): Promise<{ turns: number; skipped: number }> {
  const turns = await prisma.turn.findMany({
    where: { sessionId: { in: sessions.map((s) => s.sessionId) }, role: 'agent' },
    orderBy: [{ sessionId: 'asc' }, { index: 'asc' }],
    select: { id: true, sessionId: true },
  });
  const bySession = new Map<string, string[]>();
  for (const t of turns) bySession.set(t.sessionId, [...(bySession.get(t.sessionId) ?? []), t.id]);
  const rows: { turnId: string; advantage: number }[] = [];
  let skipped = 0;
  for (const s of sessions) {
    const ids = bySession.get(s.sessionId) ?? [];
    if (s.advantages.length > ids.length) {
      skipped++;
      continue;
    }
    const last = ids.slice(ids.length - s.advantages.length);
    s.advantages.forEach((a, k) => rows.push({ turnId: last[k]!, advantage: a }));
  }
  if (rows.length) await saveCriticAdvantages(prisma, trainingRunId, rows);
  return { turns: rows.length, skipped };
}
