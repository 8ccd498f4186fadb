// People's ids on a recruiting platform (Prolific), given once before their first session of a study that asks
// (bot/session/admission.ts) and read only to pay them (bot/study-payouts.ts, `study payouts --format prolific`).
// Pay data: no export reads this table, and a person's erasure deletes their rows (prisma/privacy-store.ts).
import type { PrismaClient } from './generated/client.ts';
import { StudyError } from './study-store.ts';

/** The platforms a study may ask an id of, with the shape of their ids. */
export const PAY_PLATFORMS = {
  // Prolific participant ids are 24 hexadecimal characters.
  prolific: { label: 'Prolific ID', pattern: /^[0-9a-f]{24}$/i, example: '5f3c9a1b2c4d6e7f8a9b0c1d' },
} as const;

export type PayPlatform = keyof typeof PAY_PLATFORMS;

export function isPayPlatform(name: string): name is PayPlatform {
  return Object.hasOwn(PAY_PLATFORMS, name);
}

/** The id as it will be stored (trimmed), or a StudyError saying what a valid one looks like. */
export function checkPlatformId(platform: PayPlatform, id: string): string {
  const p = PAY_PLATFORMS[platform];
  const trimmed = id.trim();
  if (!p.pattern.test(trimmed))
    throw new StudyError(
      `That is not a ${p.label}: it is 24 letters and digits, such as ${p.example}. Please check it and try again.`,
    );
  return trimmed.toLowerCase();
}

/** Whether the person has given their id on this platform. */
export async function hasPayAccount(
  prisma: PrismaClient,
  participantId: string,
  platform: PayPlatform,
): Promise<boolean> {
  return (await prisma.payAccount.count({ where: { participantId, platform } })) > 0;
}

/** Stores (or replaces) the person's id on the platform; the person must exist (they accepted consent first). */
export async function savePayAccount(
  prisma: PrismaClient,
  participantId: string,
  platform: PayPlatform,
  id: string,
): Promise<void> {
  const accountId = checkPlatformId(platform, id);
  await prisma.payAccount.upsert({
    where: { participantId_platform: { participantId, platform } },
    create: { participantId, platform, accountId },
    update: { accountId },
  });
}

/** Platform ids by the person's external (Discord) id, for the people given. */
export async function payAccountsByPerson(
  prisma: PrismaClient,
  externalIds: readonly string[],
  platform: PayPlatform,
): Promise<Map<string, string>> {
  const rows = await prisma.payAccount.findMany({
    where: { platform, participant: { discordUserId: { in: [...externalIds] } } },
    select: { accountId: true, participant: { select: { discordUserId: true } } },
  });
  return new Map(rows.map((r) => [r.participant.discordUserId, r.accountId]));
}
