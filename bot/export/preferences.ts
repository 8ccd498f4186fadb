// Exports people's pairwise preferences (prisma/preference-store.ts) as JSON lines, one answered comparison a
// line, raters pseudonymised like every export (salted HMAC of the Discord id). Only raters whose data may
// leave (consented, not withdrawn, not deleted) are exported; unanswered comparisons are not.
import type { Writable } from 'node:stream';
import { once } from 'node:events';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { pseudonymizer } from './pseudonym.ts';
import { sharedParticipantWhere } from '../../prisma/cohorts.ts';
import { describeSteps } from './query.ts';

export interface PreferenceRecord {
  comparison_id: string;
  task_id: string;
  session_a: string;
  session_b: string;
  policy_a: string | null;
  policy_b: string | null;
  /** "a" | "b" | "tie": which agent the person judged more helpful. */
  choice: string;
  rater: string;
  shown_at: string;
  answered_at: string | null;
}

/** Writes the records to `out` (not ended); returns how many. */
export async function exportPreferences(prisma: PrismaClient, salt: string, out: Writable): Promise<number> {
  const pseudonym = pseudonymizer(salt);
  const rows = await prisma.preference.findMany({
    where: { choice: { not: null }, rater: sharedParticipantWhere },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    include: {
      rater: { select: { discordUserId: true } },
      sessionA: { select: { taskId: true, policyVersion: { select: { name: true } } } },
      sessionB: { select: { policyVersion: { select: { name: true } } } },
    },
  });
  for (const r of rows) {
    const rec: PreferenceRecord = {
      comparison_id: r.id,
      task_id: r.sessionA.taskId,
      session_a: r.sessionAId,
      session_b: r.sessionBId,
      policy_a: r.sessionA.policyVersion?.name ?? null,
      policy_b: r.sessionB.policyVersion?.name ?? null,
      choice: r.choice!,
      rater: pseudonym(r.rater.discordUserId),
      shown_at: r.createdAt.toISOString(),
      answered_at: r.answeredAt?.toISOString() ?? null,
    };
    if (!out.write(JSON.stringify(rec) + '\n')) await once(out, 'drain');
  }
  return rows.length;
}

/** Null when there are preferences to export; otherwise why none (how many comparisons each rule left). */
export async function preferencesEmptyReason(prisma: PrismaClient): Promise<string | null> {
  const steps = [
    { label: 'offered (/compare)', sessions: await prisma.preference.count() },
    { label: 'answered', sessions: await prisma.preference.count({ where: { choice: { not: null } } }) },
    {
      label: 'by consented, not withdrawn, not deleted raters',
      sessions: await prisma.preference.count({ where: { choice: { not: null }, rater: sharedParticipantWhere } }),
    },
  ];
  return steps.at(-1)!.sessions > 0 ? null : describeSteps(steps, 'comparison(s)');
}
