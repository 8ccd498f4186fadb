// What a study owes each person who took part: one line per person with their platform id (Discord id), answered
// sessions, active minutes and the amount its pay rules give (tasks/study-pay.ts sessionAmountCents, session by
// session). People who deleted their data are paid too: their answered sessions left a row without text under
// the keyed hash that stands for them (prisma/privacy-store.ts), and their line names that hash. Written as CSV by
// `sweetloop study payouts` (bin/commands/study.ts).
import type { PrismaClient } from '../prisma/generated/client.ts';
import { StudyError, type StudyWithArms } from '../prisma/study-store.ts';
import { sessionTimes, studyPayCounts } from '../prisma/study-stats.ts';
import { hasPay, sessionAmountCents } from '../tasks/study-pay.ts';
import { formatAmount } from './studies.ts';
import { payAccountsByPerson } from '../prisma/pay-account-store.ts';

export interface PayoutLine {
  /** The person's platform id (Discord id), or the keyed hash ("erased:…") of someone who deleted their data. */
  platformId: string;
  erased: boolean;
  /** Answered sessions (the ones the rules pay). */
  sessions: number;
  successes: number;
  activeMs: number;
  amountCents: number;
}

export interface Payouts {
  currency: string;
  lines: PayoutLine[];
  sessions: number;
  totalCents: number;
}

/** Every person's payout in the study, by platform id (erased people after the others). Refused without pay rules. */
export async function studyPayouts(prisma: PrismaClient, study: StudyWithArms): Promise<Payouts> {
  if (!hasPay(study) || !study.currency)
    throw new StudyError(
      `Study "${study.name}" has no pay rules (--pay-per-session, --bonus-success): there is nothing to pay.`,
    );
  const [live, erased] = await Promise.all([
    sessionTimes(prisma, { studyId: study.id, statuses: ['answered'] }),
    prisma.erasedStudySession.findMany({
      where: { studyId: study.id },
      select: { participantKey: true, success: true, activeMs: true },
    }),
  ]);
  const byPerson = new Map<string, PayoutLine>();
  const add = (platformId: string, isErased: boolean, s: { success: boolean | null; activeMs: number }) => {
    const line = byPerson.get(platformId) ?? {
      platformId,
      erased: isErased,
      sessions: 0,
      successes: 0,
      activeMs: 0,
      amountCents: 0,
    };
    line.sessions++;
    if (s.success) line.successes++;
    line.activeMs += s.activeMs;
    line.amountCents += sessionAmountCents(study, { answered: true, success: s.success });
    byPerson.set(platformId, line);
  };
  for (const s of live) add(s.externalId, false, s);
  for (const s of erased) add(s.participantKey, true, s);
  const lines = [...byPerson.values()].sort(
    (a, b) => Number(a.erased) - Number(b.erased) || a.platformId.localeCompare(b.platformId),
  );
  return {
    currency: study.currency,
    lines,
    sessions: live.length + erased.length,
    totalCents: lines.reduce((a, l) => a + l.amountCents, 0),
  };
}

/**
 * What the study owes in all (the total of studyPayouts) without a line a person: answered sessions counted by
 * success in the database, each count paid by sessionAmountCents. Null without pay rules.
 */
export async function studyPayTotal(prisma: PrismaClient, study: StudyWithArms): Promise<number | null> {
  if (!hasPay(study) || !study.currency) return null;
  const counts = await studyPayCounts(prisma, study.id);
  return counts.reduce((a, c) => a + c.n * sessionAmountCents(study, { answered: true, success: c.success }), 0);
}

const csvField = (v: string) => (/[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);

/** The payouts as CSV: a header, then platform_id, sessions, active_minutes (one decimal), amount (major units), currency. */
export function payoutsCsv(p: Payouts): string {
  const rows = p.lines.map((l) => [
    l.platformId,
    String(l.sessions),
    (l.activeMs / 60_000).toFixed(1),
    formatAmount(l.amountCents, null),
    p.currency,
  ]);
  return (
    [['platform_id', 'sessions', 'active_minutes', 'amount', 'currency'], ...rows]
      .map((r) => r.map(csvField).join(','))
      .join('\n') + '\n'
  );
}

export interface ProlificBonuses {
  /** Prolific's bulk-bonus upload: `participant_id,amount` lines, amounts in the study's currency, no header. */
  text: string;
  people: number;
  totalCents: number;
  /** Owed but not in the file: people erased since (their Prolific id went with them) or who never gave one. */
  left: PayoutLine[];
}

/** The payouts as Prolific's bulk-bonus file, by the Prolific ids people gave (prisma/pay-account-store.ts). */
export async function prolificBonuses(
  prisma: PrismaClient,
  study: StudyWithArms,
  p: Payouts,
): Promise<ProlificBonuses> {
  if (study.participantIdPlatform !== 'prolific')
    throw new StudyError(
      `Study "${study.name}" does not ask for Prolific ids (create it with --participant-id prolific): there is no one to pay on Prolific.`,
    );
  const owed = p.lines.filter((l) => l.amountCents > 0);
  const ids = await payAccountsByPerson(
    prisma,
    owed.filter((l) => !l.erased).map((l) => l.platformId),
    'prolific',
  );
  const paid = owed.filter((l) => !l.erased && ids.has(l.platformId));
  return {
    text: paid.map((l) => `${ids.get(l.platformId)},${formatAmount(l.amountCents, null)}\n`).join(''),
    people: paid.length,
    totalCents: paid.reduce((a, l) => a + l.amountCents, 0),
    left: owed.filter((l) => !paid.includes(l)),
  };
}
