// Deletion that deletes: everything a person left behind, in the database and on disk, is removed or replaced by
// a keyed hash that cannot be turned back into their id, and a receipt says what was done. Shared by
// /privacy delete and `sweetloop privacy delete <user>` (an operator handling a request by mail).
//
// - Database: their sessions (turns, evaluations, ratings, flags) and the ratings they gave are deleted; audit
//   rows naming them (as actor or target) keep their action and time but name the keyed hash instead, and lose
//   their detail (which may quote them); their participant row is kept only under the keyed hash, emptied, so
//   a ban still applies when they come back (engine.start looks the hash up) — without their raw id.
// - Files: every file under the data and checkpoint directories holding their id, their name or a sentence
//   they wrote (training snapshots, pair caches, exports) loses those lines (JSON Lines) or is deleted.
// - Policy versions trained on their sessions are marked (metrics.trainedOnErasedData) so nobody re-trains or
//   publishes them unknowingly.
// Their Discord threads (and the bot's messages there) are deleted by the channel (bot/discord), which gets the
// thread ids from the receipt.
import { createHmac } from 'node:crypto';
import { lstat, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Prisma, type PrismaClient } from '../prisma/generated/client.ts';

/** The key used when none is configured (development only; bin/config.ts refuses it for a Discord bot). */
export const DEV_PRIVACY_KEY = 'sweetloop-dev-privacy-key';

/** The keyed hash standing for a person after deletion: stable (bans keep working), not reversible without the key. */
export function erasedId(key: string, externalId: string): string {
  return `erased:${createHmac('sha256', key).update(externalId).digest('hex').slice(0, 32)}`;
}

export interface DeletionOptions {
  /** Secret of the keyed hash (never stored with the data). */
  key: string;
  /** Folders whose files are searched for the person's text (data and checkpoint directories). */
  dirs?: string[];
  /** Who asked (their own id, or the operator); audited under the keyed hash when it is the person. */
  requestedBy?: string;
  /** Names the person is known by beyond the stored one (their Discord username), searched for in files. */
  names?: string[];
}

export interface DeletionReceipt {
  /** The keyed hash that now stands for the person. */
  pseudonym: string;
  sessions: number;
  turns: number;
  ratings: number;
  auditRows: number;
  /** Threads the person's sessions ran in (for the channel to delete). */
  threadIds: string[];
  filesDeleted: string[];
  filesRewritten: string[];
  policiesMarked: string[];
  at: Date;
}

const MAX_SCAN_BYTES = 512 * 1024 * 1024;

/** Deletes everything of the person named by `externalId`; returns the receipt (all zero when nothing was known). */
export async function deletePerson(prisma: PrismaClient, externalId: string, o: DeletionOptions): Promise<DeletionReceipt> {
  const pseudonym = erasedId(o.key, externalId);
  const now = new Date();
  const p = await prisma.participant.findUnique({ where: { discordUserId: externalId } });
  const sessions = p ? await prisma.session.findMany({ where: { participantId: p.id }, select: { id: true, threadId: true } }) : [];
  const sessionIds = sessions.map((s) => s.id);
  const texts = p
    ? [
        ...(await prisma.turn.findMany({ where: { sessionId: { in: sessionIds }, role: 'human' }, select: { content: true } })).map((t) => t.content),
        ...(await prisma.rating.findMany({ where: { raterId: p.id, comment: { not: null } }, select: { comment: true } })).map((r) => r.comment!),
      ]
    : [];
  const db = await prisma.$transaction(async (tx) => {
    const turns = await tx.turn.count({ where: { sessionId: { in: sessionIds } } });
    const ratings = p ? await tx.rating.deleteMany({ where: { raterId: p.id } }) : { count: 0 };
    if (p) await tx.session.deleteMany({ where: { participantId: p.id } });
    const targets = [externalId, ...(p ? [p.id] : []), ...sessionIds];
    const audits = await tx.auditLog.findMany({ where: { OR: [{ actor: externalId }, { target: { in: targets } }] }, select: { id: true, actor: true, target: true } });
    for (const a of audits) {
      const target = a.target !== null && targets.includes(a.target) ? pseudonym : a.target;
      await tx.auditLog.update({ where: { id: a.id }, data: { actor: a.actor === externalId ? pseudonym : a.actor, target, detail: Prisma.DbNull } });
    }
    // What they did as a moderator or operator names them by id: the hash stands in.
    await tx.moderationFlag.updateMany({ where: { resolvedBy: externalId }, data: { resolvedBy: pseudonym } });
    await tx.experiment.updateMany({ where: { startedBy: externalId }, data: { startedBy: pseudonym } });
    await tx.experiment.updateMany({ where: { stoppedBy: externalId }, data: { stoppedBy: pseudonym } });
    if (p) {
      // Their comparisons of others' sessions and the quality computed from their work go with them.
      await tx.preference.deleteMany({ where: { raterId: p.id } });
      await tx.participantQuality.deleteMany({ where: { participantId: p.id } });
    }
    // A pause switched by them names them too.
    const paused = await tx.setting.findMany({ where: { value: { path: ['by'], equals: externalId } } });
    for (const s of paused) await tx.setting.update({ where: { key: s.key }, data: { value: { ...(s.value as object), by: pseudonym } } });
    if (p) {
      // Kept only as the hash, emptied: a ban (global or per guild) still applies if they come back.
      const existing = await tx.participant.findUnique({ where: { discordUserId: pseudonym } });
      if (existing && existing.id !== p.id) {
        await tx.participant.update({
          where: { id: existing.id },
          data: { banned: existing.banned || p.banned, bannedGuildIds: [...new Set([...existing.bannedGuildIds, ...p.bannedGuildIds])], bannedReason: null },
        });
        await tx.participant.delete({ where: { id: p.id } });
      } else {
        await tx.participant.update({
          where: { id: p.id },
          data: { discordUserId: pseudonym, displayName: null, consentGivenAt: null, consentWithdrawnAt: now, deletedAt: now, bannedReason: null },
        });
      }
    }
    await tx.auditLog.create({
      data: { actor: !o.requestedBy || o.requestedBy === externalId ? pseudonym : o.requestedBy, action: 'privacy.delete', target: pseudonym, detail: { sessions: sessions.length, turns, ratings: ratings.count } },
    });
    return { turns, ratings: ratings.count, auditRows: audits.length };
  });
  const policiesMarked = await markPolicies(prisma, sessionIds);
  const needles = [externalId, ...(p?.displayName ? [p.displayName] : []), ...(o.names ?? []), ...texts].map((t) => t.trim()).filter((t) => t.length >= 3);
  const files = { deleted: [] as string[], rewritten: [] as string[] };
  for (const dir of o.dirs ?? []) await scrubDir(dir, needles, files);
  return {
    pseudonym,
    sessions: sessions.length,
    turns: db.turns,
    ratings: db.ratings,
    auditRows: db.auditRows,
    threadIds: sessions.flatMap((s) => (s.threadId ? [s.threadId] : [])),
    filesDeleted: files.deleted,
    filesRewritten: files.rewritten,
    policiesMarked,
    at: now,
  };
}

/** Marks the policy versions whose training runs used any of these sessions; returns their names. */
async function markPolicies(prisma: PrismaClient, sessionIds: string[]): Promise<string[]> {
  if (!sessionIds.length) return [];
  const ids = new Set(sessionIds);
  const runs = await prisma.trainingRun.findMany({ select: { id: true, dataSnapshot: true } });
  const used = runs.filter((r) => ((r.dataSnapshot as { sessions?: { id: string }[] } | null)?.sessions ?? []).some((s) => ids.has(s.id))).map((r) => r.id);
  if (!used.length) return [];
  const versions = await prisma.policyVersion.findMany({ where: { trainingRunId: { in: used } }, select: { id: true, name: true, metrics: true } });
  for (const v of versions) {
    const metrics = { ...((v.metrics as object | null) ?? {}), trainedOnErasedData: true };
    await prisma.policyVersion.update({ where: { id: v.id }, data: { metrics } });
  }
  return versions.map((v) => v.name);
}

/** Removes the needles' lines from JSON Lines files, and deletes any other file holding one. */
async function scrubDir(dir: string, needles: string[], out: { deleted: string[]; rewritten: string[] }): Promise<void> {
  if (!needles.length) return;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return; // a folder that does not exist holds nothing
  }
  const bytes = needles.map((n) => Buffer.from(n, 'utf8'));
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      await scrubDir(path, needles, out);
      continue;
    }
    if (!e.isFile()) continue;
    const st = await lstat(path);
    if (st.size > MAX_SCAN_BYTES) continue;
    const data = await readFile(path);
    if (!bytes.some((b) => data.includes(b))) continue;
    if (/\.jsonl$/i.test(e.name)) {
      const kept = data
        .toString('utf8')
        .split('\n')
        .filter((line) => !needles.some((n) => line.includes(n) || line.includes(JSON.stringify(n).slice(1, -1))));
      await writeFile(path, kept.join('\n'));
      out.rewritten.push(path);
    } else {
      await rm(path, { force: true });
      out.deleted.push(path);
    }
  }
}

/** The receipt as the person (or operator) reads it. */
export function formatReceipt(r: DeletionReceipt): string {
  const files = r.filesDeleted.length + r.filesRewritten.length;
  return [
    `Deleted: ${r.sessions} session(s) with ${r.turns} message(s), ${r.ratings} rating(s).`,
    `Threads removed from Discord: ${r.threadIds.length}. Files cleaned: ${files} (${r.filesDeleted.length} deleted, ${r.filesRewritten.length} rewritten).`,
    `Audit entries pseudonymised: ${r.auditRows}.${r.policiesMarked.length ? ` Policy versions trained on your sessions marked: ${r.policiesMarked.join(', ')}.` : ''}`,
    `Your id is no longer stored; a keyed hash stands in for it so that a ban still applies. Receipt time ${r.at.toISOString()}.`,
  ].join('\n');
}

/** Withdraws consent without deleting: kept sessions leave no export or training set from now on (audited). */
export async function withdrawConsent(prisma: PrismaClient, externalId: string): Promise<boolean> {
  return prisma.$transaction(async (tx) => {
    const p = await tx.participant.findUnique({ where: { discordUserId: externalId } });
    if (!p?.consentGivenAt) return false;
    await tx.participant.update({ where: { id: p.id }, data: { consentGivenAt: null, consentWithdrawnAt: new Date() } });
    await tx.auditLog.create({ data: { actor: externalId, action: 'consent.withdraw', target: p.id } });
    return true;
  });
}
