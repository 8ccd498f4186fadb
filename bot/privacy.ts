// Deletion that deletes: everything a person left behind, in the database and on disk, is removed or replaced by
// a keyed hash that cannot be turned back into their id, and a receipt says what was done. Shared by
// /privacy delete and `sweetloop privacy delete <user>` (an operator handling a request by mail).
//
// - Database (prisma/privacy-store.ts): their sessions (turns, evaluations, ratings, flags) and the ratings they gave are deleted; audit
//   rows naming them (as actor or target) keep their action and time but name the keyed hash instead, and lose
//   their detail (which may quote them); their participant row is kept only under the keyed hash, emptied, so
//   a ban still applies when they come back (engine.start looks the hash up) — without their raw id. Their
//   answered sessions of studies that pay leave, under the hash, what the payout needs (success, active time).
// - Files: every file under the data and checkpoint directories holding their id, their name or a sentence
//   they wrote (training snapshots, pair caches, exports) loses those lines (JSON Lines) or is deleted.
// - Policy versions trained on their sessions are marked (metrics.trainedOnErasedData) so nobody re-trains or
//   publishes them unknowingly.
// Their Discord threads (and the bot's messages there) are deleted by the channel (bot/discord), which gets the
// thread ids from the receipt.
import { createHmac } from 'node:crypto';
import { lstat, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PrismaClient } from '../prisma/generated/client.ts';
import { eraseParticipant, markTrainedOnErasedData } from '../prisma/privacy-store.ts';

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
  /** Answered sessions of paying studies kept, without text, under the keyed hash so the study can pay them. */
  paySessionsKept: number;
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
  const erased = await eraseParticipant(prisma, externalId, { pseudonym, now, ...(o.requestedBy ? { requestedBy: o.requestedBy } : {}) });
  const policiesMarked = await markTrainedOnErasedData(prisma, erased.sessions.map((s) => s.id));
  const needles = [externalId, ...(erased.displayName ? [erased.displayName] : []), ...(o.names ?? []), ...erased.texts].map((t) => t.trim()).filter((t) => t.length >= 3);
  const files = { deleted: [] as string[], rewritten: [] as string[] };
  for (const dir of o.dirs ?? []) await scrubDir(dir, needles, files);
  return {
    pseudonym,
    sessions: erased.sessions.length,
    turns: erased.turns,
    ratings: erased.ratings,
    auditRows: erased.auditRows,
    paySessionsKept: erased.paySessionsKept,
    threadIds: erased.sessions.flatMap((s) => (s.threadId ? [s.threadId] : [])),
    filesDeleted: files.deleted,
    filesRewritten: files.rewritten,
    policiesMarked,
    at: now,
  };
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
    ...(r.paySessionsKept ? [`Kept so that you are paid: ${r.paySessionsKept} answered study session(s), under the keyed hash, as success and active time only (no text).`] : []),
    `Your id is no longer stored; a keyed hash stands in for it so that a ban still applies. Receipt time ${r.at.toISOString()}.`,
  ].join('\n');
}
