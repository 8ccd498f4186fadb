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
//   they wrote (training snapshots, pair caches, exports): JSON Lines and Parquet files (the hf folder's too) are
//   decoded and rewritten without the rows holding it (bot/export/scrub.ts); any other file holding it is
//   deleted; a file that cannot be cleaned is left as it was and named in the receipt.
// - Policy versions trained on their sessions are marked (metrics.trainedOnErasedData) so nobody re-trains or
//   publishes them unknowingly.
// Their Discord threads (and the bot's messages there) are deleted by the channel (bot/discord), which gets the
// thread ids from the receipt.
import { createHmac } from 'node:crypto';
import { lstat, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { PrismaClient } from '../prisma/generated/client.ts';
import { eraseParticipant, markTrainedOnErasedData } from '../prisma/privacy-store.ts';
import { bytesHoldNeedle, isParquet, ScrubError, scrubJsonl, scrubParquet, updateHfCardRows } from './export/scrub.ts';

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
  /** Files that could not be cleaned (malformed, too large): left as they were, to be dealt with by hand. */
  filesFailed: { path: string; reason: string }[];
  policiesMarked: string[];
  at: Date;
}

const MAX_SCAN_BYTES = 512 * 1024 * 1024;

interface FileOutcome {
  deleted: string[];
  rewritten: string[];
  failed: { path: string; reason: string }[];
}

/** Deletes everything of the person named by `externalId`; returns the receipt (all zero when nothing was known). */
export async function deletePerson(prisma: PrismaClient, externalId: string, o: DeletionOptions): Promise<DeletionReceipt> {
  const pseudonym = erasedId(o.key, externalId);
  const now = new Date();
  const erased = await eraseParticipant(prisma, externalId, { pseudonym, now, ...(o.requestedBy ? { requestedBy: o.requestedBy } : {}) });
  const policiesMarked = await markTrainedOnErasedData(prisma, erased.sessions.map((s) => s.id));
  const needles = [externalId, ...(erased.displayName ? [erased.displayName] : []), ...(o.names ?? []), ...erased.texts].map((t) => t.trim()).filter((t) => t.length >= 3);
  const files: FileOutcome = { deleted: [], rewritten: [], failed: [] };
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
    filesFailed: files.failed,
    policiesMarked,
    at: now,
  };
}

/**
 * Cleans every file under `dir`: JSON Lines and Parquet files (exports, training snapshots, pair caches, a Hugging
 * Face folder's data) lose the rows that hold a needle once decoded (bot/export/scrub.ts); any other file holding
 * one (a JSON file decoded, else its bytes) is deleted. A file that cannot be cleaned is left as it was and listed.
 */
async function scrubDir(dir: string, needles: string[], out: FileOutcome): Promise<void> {
  if (!needles.length) return;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return; // a folder that does not exist holds nothing
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      await scrubDir(path, needles, out);
      continue;
    }
    if (!e.isFile()) continue;
    const st = await lstat(path);
    if (st.size > MAX_SCAN_BYTES) {
      out.failed.push({ path, reason: `larger than ${MAX_SCAN_BYTES / 2 ** 20} MiB: not searched` });
      continue;
    }
    try {
      await scrubFile(path, e.name, needles, out);
    } catch (err) {
      if (!(err instanceof ScrubError)) throw err;
      out.failed.push({ path, reason: err.message });
    }
  }
}

async function scrubFile(path: string, name: string, needles: string[], out: FileOutcome): Promise<void> {
  if (/\.jsonl$/i.test(name)) {
    if ((await scrubJsonl(path, needles)).removed) out.rewritten.push(path);
    return;
  }
  const data = await readFile(path);
  if (isParquet(data)) {
    const r = await scrubParquet(path, needles);
    if (!r.removed) return;
    out.rewritten.push(path);
    const card = await updateHfCardRows(path, r.kept);
    if (card && !out.rewritten.includes(card)) out.rewritten.push(card);
    return;
  }
  if (/\.parquet$/i.test(name)) throw new ScrubError(`${path}: named .parquet but not a Parquet file; the file was left as it was`);
  if (!bytesHoldNeedle(name, data, needles)) return;
  await rm(path, { force: true });
  out.deleted.push(path);
}

/** The receipt as the person (or operator) reads it. */
export function formatReceipt(r: DeletionReceipt): string {
  const files = r.filesDeleted.length + r.filesRewritten.length;
  return [
    `Deleted: ${r.sessions} session(s) with ${r.turns} message(s), ${r.ratings} rating(s).`,
    `Threads removed from Discord: ${r.threadIds.length}. Files cleaned: ${files} (${r.filesDeleted.length} deleted, ${r.filesRewritten.length} rewritten).`,
    `Audit entries pseudonymised: ${r.auditRows}.${r.policiesMarked.length ? ` Policy versions trained on your sessions marked: ${r.policiesMarked.join(', ')}.` : ''}`,
    ...(r.filesFailed.length ? [`Files that could NOT be cleaned (left as they were; an operator must clean or delete them): ${r.filesFailed.map((f) => f.reason).join('; ')}`] : []),
    ...(r.paySessionsKept ? [`Kept so that you are paid: ${r.paySessionsKept} answered study session(s), under the keyed hash, as success and active time only (no text).`] : []),
    `Your id is no longer stored; a keyed hash stands in for it so that a ban still applies. Receipt time ${r.at.toISOString()}.`,
  ].join('\n');
}
