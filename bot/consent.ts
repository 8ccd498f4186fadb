// Consent to data collection: nobody's session is recorded before they accept the configured text. Withdrawing
// and deleting are in bot/privacy.ts.
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
