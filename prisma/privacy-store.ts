// A person's rows erased, or their consent withdrawn, each in one transaction (bot/privacy.ts says what deletion
// means and cleans the files). The keyed hash that stands for an erased person is computed by the caller, so the
// key never reaches the data layer.
import { Prisma, type PrismaClient } from './generated/client.ts';
import { sessionSummaries } from './session-summary.ts';
import { hasPay } from '../tasks/study-pay.ts';

/** What the erasure found and did: the receipt's figures, and what the caller still has to clean elsewhere. */
export interface ErasedRows {
  /** The person's sessions (deleted), with the threads they ran in. */
  sessions: { id: string; threadId: string | null }[];
  turns: number;
  ratings: number;
  auditRows: number;
  /** Answered sessions of studies with pay rules, kept without text under the keyed hash (ErasedStudySession). */
  paySessionsKept: number;
}

/**
 * Deletes the person's sessions (turns, evaluations, ratings, flags), the ratings, preferences, quality and training
 * exclusion that are theirs; audit rows, flags, experiments, settings, studies, dashboard tokens and exclusions
 * naming them name `pseudonym` instead (audit rows lose their detail, which may quote them); their participant row is kept only under `pseudonym`, emptied, so that a ban
 * still applies when they come back. What a study still owes them survives: each answered session of a study with
 * pay rules leaves an ErasedStudySession row under `pseudonym` (success and active time, no text), which
 * `sweetloop study payouts` pays. One transaction, audited as `privacy.delete`.
 */
export async function eraseParticipant(
  prisma: PrismaClient,
  externalId: string,
  o: { pseudonym: string; requestedBy?: string; now: Date },
): Promise<ErasedRows> {
  const { pseudonym, now } = o;
  const p = await prisma.participant.findUnique({ where: { discordUserId: externalId } });
  const sessions = p
    ? await prisma.session.findMany({ where: { participantId: p.id }, select: { id: true, threadId: true } })
    : [];
  const sessionIds = sessions.map((s) => s.id);
  const counts = await prisma.$transaction(async (tx) => {
    const turns = await tx.turn.count({ where: { sessionId: { in: sessionIds } } });
    const paid = p ? await paidStudySessions(tx, p.id) : [];
    if (paid.length)
      await tx.erasedStudySession.createMany({
        data: paid.map((x) => ({ ...x, participantKey: pseudonym, erasedAt: now })),
      });
    const ratings = p ? await tx.rating.deleteMany({ where: { raterId: p.id } }) : { count: 0 };
    if (p) await tx.session.deleteMany({ where: { participantId: p.id } });
    const targets = [externalId, ...(p ? [p.id] : []), ...sessionIds];
    const audits = await tx.auditLog.findMany({
      where: { OR: [{ actor: externalId }, { target: { in: targets } }] },
      select: { id: true, actor: true, target: true },
    });
    for (const a of audits) {
      const target = a.target !== null && targets.includes(a.target) ? pseudonym : a.target;
      await tx.auditLog.update({
        where: { id: a.id },
        data: { actor: a.actor === externalId ? pseudonym : a.actor, target, detail: Prisma.DbNull },
      });
    }
    // What they did as a moderator or operator names them by id: the hash stands in.
    await tx.moderationFlag.updateMany({ where: { resolvedBy: externalId }, data: { resolvedBy: pseudonym } });
    await tx.experiment.updateMany({ where: { startedBy: externalId }, data: { startedBy: pseudonym } });
    await tx.experiment.updateMany({ where: { stoppedBy: externalId }, data: { stoppedBy: pseudonym } });
    await tx.study.updateMany({ where: { createdBy: externalId }, data: { createdBy: pseudonym } });
    await tx.dashboardToken.updateMany({ where: { createdBy: externalId }, data: { createdBy: pseudonym } });
    await tx.trainingExclusion.updateMany({ where: { excludedBy: externalId }, data: { excludedBy: pseudonym } });
    if (p) {
      // Their comparisons of others' sessions, the quality computed from their work and a moderator's exclusion of
      // their sessions (whose reason may quote them; no session is left to exclude) go with them.
      await tx.preference.deleteMany({ where: { raterId: p.id } });
      await tx.participantQuality.deleteMany({ where: { participantId: p.id } });
      await tx.trainingExclusion.deleteMany({ where: { participantId: p.id } });
      // Their platform ids (pay data) go too: an erased person's pay is settled by hand (docs/running-a-study.md).
      await tx.payAccount.deleteMany({ where: { participantId: p.id } });
    }
    // A pause switched by them names them too.
    const paused = await tx.setting.findMany({ where: { value: { path: ['by'], equals: externalId } } });
    for (const s of paused)
      await tx.setting.update({ where: { key: s.key }, data: { value: { ...(s.value as object), by: pseudonym } } });
    if (p) {
      // Kept only as the hash, emptied: a ban (global or per guild) still applies if they come back.
      const existing = await tx.participant.findUnique({ where: { discordUserId: pseudonym } });
      if (existing && existing.id !== p.id) {
        await tx.participant.update({
          where: { id: existing.id },
          data: {
            banned: existing.banned || p.banned,
            bannedGuildIds: [...new Set([...existing.bannedGuildIds, ...p.bannedGuildIds])],
            bannedReason: null,
          },
        });
        await tx.participant.delete({ where: { id: p.id } });
      } else {
        await tx.participant.update({
          where: { id: p.id },
          data: {
            discordUserId: pseudonym,
            displayName: null,
            consentGivenAt: null,
            consentWithdrawnAt: now,
            deletedAt: now,
            bannedReason: null,
          },
        });
      }
    }
    await tx.auditLog.create({
      data: {
        actor: !o.requestedBy || o.requestedBy === externalId ? pseudonym : o.requestedBy,
        action: 'privacy.delete',
        target: pseudonym,
        detail: { sessions: sessions.length, turns, ratings: ratings.count, paySessionsKept: paid.length },
      },
    });
    return { turns, ratings: ratings.count, auditRows: audits.length, paySessionsKept: paid.length };
  });
  return { sessions, ...counts };
}

/** The person's answered sessions in studies that pay, as the payout needs them (no text). */
async function paidStudySessions(
  tx: Prisma.TransactionClient,
  participantId: string,
): Promise<{ studyId: string; success: boolean; activeMs: number }[]> {
  const studies = await tx.study.findMany({
    where: { sessions: { some: { participantId, status: 'answered' } } },
    select: { id: true, payPerSessionCents: true, bonusSuccessCents: true },
  });
  const paying = studies.filter(hasPay).map((s) => s.id);
  if (!paying.length) return [];
  const summaries = await sessionSummaries(tx, { participantId, status: 'answered', studyId: { in: paying } });
  return summaries.map((x) => ({ studyId: x.studyId as string, success: x.success === true, activeMs: x.activeMs }));
}

/**
 * Marks the policy versions whose training runs used any of these sessions (metrics.trainedOnErasedData), so
 * nobody re-trains or publishes them unknowingly; returns their names.
 */
export async function markTrainedOnErasedData(prisma: PrismaClient, sessionIds: string[]): Promise<string[]> {
  if (!sessionIds.length) return [];
  const ids = new Set(sessionIds);
  const runs = await prisma.trainingRun.findMany({ select: { id: true, dataSnapshot: true } });
  const used = runs
    .filter((r) =>
      ((r.dataSnapshot as { sessions?: { id: string }[] } | null)?.sessions ?? []).some((s) => ids.has(s.id)),
    )
    .map((r) => r.id);
  if (!used.length) return [];
  const versions = await prisma.policyVersion.findMany({
    where: { trainingRunId: { in: used } },
    select: { id: true, name: true, metrics: true },
  });
  await prisma.$transaction(
    versions.map((v) =>
      prisma.policyVersion.update({
        where: { id: v.id },
        data: { metrics: { ...((v.metrics as object | null) ?? {}), trainedOnErasedData: true } },
      }),
    ),
  );
  return versions.map((v) => v.name);
}

/** Withdraws consent without deleting: kept sessions leave no export or training set from now on (audited). */
export async function withdrawConsent(prisma: PrismaClient, externalId: string): Promise<boolean> {
  return prisma.$transaction(async (tx) => {
    const p = await tx.participant.findUnique({ where: { discordUserId: externalId } });
    if (!p?.consentGivenAt) return false;
    await tx.participant.update({
      where: { id: p.id },
      data: { consentGivenAt: null, consentWithdrawnAt: new Date() },
    });
    await tx.auditLog.create({ data: { actor: externalId, action: 'consent.withdraw', target: p.id } });
    return true;
  });
}
