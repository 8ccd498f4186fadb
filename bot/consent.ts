// Consent to data collection: nobody's session is recorded before they accept the configured text, and
// withdrawing removes everything they contributed (sessions with their turns, evaluations, ratings and flags,
// and the ratings they gave). The participant row stays, emptied, so a ban still applies and a later accept
// starts afresh.
import type { Participant, PrismaClient } from '../prisma/generated/client.ts';

export function hasConsent(p: Pick<Participant, 'consentGivenAt'> | null | undefined): boolean {
  return !!p?.consentGivenAt;
}

export async function findParticipant(prisma: PrismaClient, externalId: string): Promise<Participant | null> {
  return prisma.participant.findUnique({ where: { discordUserId: externalId } });
}

export async function acceptConsent(prisma: PrismaClient, externalId: string, displayName: string | null): Promise<Participant> {
  const now = new Date();
  return prisma.participant.upsert({
    where: { discordUserId: externalId },
    create: { discordUserId: externalId, displayName, consentGivenAt: now },
    update: { consentGivenAt: now, consentWithdrawnAt: null, deletedAt: null, ...(displayName ? { displayName } : {}) },
  });
}

export interface DeletionResult {
  sessions: number;
  ratings: number;
}

/** Withdraws consent and deletes the person's data, in one transaction; writes the audit log. */
export async function withdrawAndDelete(prisma: PrismaClient, externalId: string): Promise<DeletionResult> {
  return prisma.$transaction(async (tx) => {
    const p = await tx.participant.findUnique({ where: { discordUserId: externalId } });
    if (!p) return { sessions: 0, ratings: 0 };
    const ratings = await tx.rating.deleteMany({ where: { raterId: p.id } });
    // What was derived from the person's data, or judged by them, goes too (their sessions' quality cascades).
    await tx.preference.deleteMany({ where: { raterId: p.id } });
    await tx.participantQuality.deleteMany({ where: { participantId: p.id } });
    const sessions = await tx.session.deleteMany({ where: { participantId: p.id } });
    const now = new Date();
    await tx.participant.update({
      where: { id: p.id },
      data: { consentGivenAt: null, consentWithdrawnAt: now, deletedAt: now, displayName: null },
    });
    await tx.auditLog.create({
      data: { actor: externalId, action: 'privacy.delete', target: p.id, detail: { sessions: sessions.count, ratings: ratings.count } },
    });
    return { sessions: sessions.count, ratings: ratings.count };
  });
}
