// Deletion by identity: a person's rows, in the database and in export files, are found by their ids (their
// participant and session ids, their export pseudonyms), never by matching text, and removed or replaced by a keyed
// hash that cannot be turned back into their id; a receipt says what was done. Shared by /privacy delete and
// `sweetloop privacy delete <user>` (an operator handling a request by mail).
//
// - Database (prisma/privacy-store.ts): their sessions (turns, evaluations, ratings, flags) and the ratings and
//   comparisons they gave are deleted; rows naming them (audit entries as actor or target, studies and dashboard
//   tokens they created, exclusions they made, flags they closed, experiments and pauses they switched) name the
//   keyed hash instead, and audit entries lose their detail (which may quote them); their participant row is kept
//   only under the keyed hash, emptied, so a ban still applies when they come back (engine.start looks the hash
//   up) — without their raw id. Their answered sessions of studies that pay leave, under the hash, what the payout
//   needs (success, active time). What they wrote that is stored in someone else's row stays.
// - Export files under the scanned folders: JSON Lines and Parquet files (the hf folder's too) are decoded and
//   rewritten without the rows whose session id or pseudonym fields name them (bot/export/scrub.ts). No file is
//   deleted, and no other file is opened: a file that cannot be cleaned, or holds rows naming no one, is left as it
//   was and named in the receipt. The protected folders (checkpoints, adapters, models) are never entered.
// - Models: no weight, tokenizer, config or adapter file is touched. Policy versions trained on their sessions
//   are marked (metrics.trainedOnErasedData), so nobody deploys, re-trains or publishes them unknowingly, and the
//   receipt lists them for an operator.
// Their Discord threads (and the bot's messages there) are deleted by the channel (bot/discord), which gets the
// thread ids from the receipt.
import { createHmac } from 'node:crypto';
import { lstat, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { PrismaClient } from '../prisma/generated/client.ts';
import { eraseParticipant, markTrainedOnErasedData } from '../prisma/privacy-store.ts';
import { pseudonymize } from './export/pseudonym.ts';
import { isInside } from './paths.ts';
import {
  isParquetFile,
  ScrubError,
  scrubJsonl,
  scrubParquet,
  updateHfCardRows,
  type RowOwner,
  type ScrubCount,
} from './export/scrub.ts';

/** The key used when none is configured (development only; bin/config-privacy.ts refuses it for a Discord bot). */
export const DEV_PRIVACY_KEY = 'sweetloop-dev-privacy-key';

/** The keyed hash standing for a person after deletion: stable (bans keep working), not reversible without the key. */
export function erasedId(key: string, externalId: string): string {
  return `erased:${createHmac('sha256', key).update(externalId).digest('hex').slice(0, 32)}`;
}

/** Where a deployment's deletions look and what they never enter (bin/config-privacy.ts privacySettings builds it). */
export interface PrivacySettings {
  /** Secret of the keyed hash (never stored with the data). */
  key: string;
  /** Folders whose export files (JSON Lines, Parquet) lose the person's rows. */
  dirs: string[];
  /** Folders never entered, even inside `dirs`: model checkpoints, adapters, downloaded models. */
  protectedDirs?: string[];
  /** Salts the exports were pseudonymised with (EXPORT_SALT): rows carrying the person's pseudonym go too. */
  exportSalts?: string[];
}

export interface DeletionOptions {
  /** Secret of the keyed hash (never stored with the data). */
  key: string;
  /** Folders whose export files (JSON Lines, Parquet) lose the person's rows. */
  dirs?: string[];
  /** Folders never entered, even inside `dirs`: model checkpoints, adapters, downloaded models. */
  protectedDirs?: string[];
  /** Salts the exports were pseudonymised with (EXPORT_SALT): rows carrying the person's pseudonym go too. */
  exportSalts?: string[];
  /** Who asked (their own id, or the operator); audited under the keyed hash when it is the person. */
  requestedBy?: string;
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
  /** Export files rewritten without the person's rows. */
  filesRewritten: string[];
  /** Files that could not be cleaned or checked (malformed, too large, rows naming no one): for an operator. */
  filesFailed: { path: string; reason: string }[];
  /** Policy versions trained on the person's sessions, marked; their files are left for an operator to judge. */
  policiesMarked: string[];
  at: Date;
}

const MAX_SCAN_BYTES = 512 * 1024 * 1024;

interface FileOutcome {
  rewritten: string[];
  failed: { path: string; reason: string }[];
}

/** Deletes everything of the person named by `externalId`; returns the receipt (all zero when nothing was known). */
export async function deletePerson(
  prisma: PrismaClient,
  externalId: string,
  o: DeletionOptions,
): Promise<DeletionReceipt> {
  const pseudonym = erasedId(o.key, externalId);
  const now = new Date();
  const erased = await eraseParticipant(prisma, externalId, {
    pseudonym,
    now,
    ...(o.requestedBy ? { requestedBy: o.requestedBy } : {}),
  });
  const policiesMarked = await markTrainedOnErasedData(
    prisma,
    erased.sessions.map((s) => s.id),
  );
  const owner: RowOwner = {
    sessionIds: new Set(erased.sessions.map((s) => s.id)),
    pseudonyms: new Set((o.exportSalts ?? []).map((salt) => pseudonymize(externalId, salt))),
  };
  const files: FileOutcome = { rewritten: [], failed: [] };
  const fenced = (o.protectedDirs ?? []).map((d) => resolve(d));
  for (const dir of o.dirs ?? []) await scrubDir(resolve(dir), owner, fenced, files);
  return {
    pseudonym,
    sessions: erased.sessions.length,
    turns: erased.turns,
    ratings: erased.ratings,
    auditRows: erased.auditRows,
    paySessionsKept: erased.paySessionsKept,
    threadIds: erased.sessions.flatMap((s) => (s.threadId ? [s.threadId] : [])),
    filesRewritten: files.rewritten,
    filesFailed: files.failed,
    policiesMarked,
    at: now,
  };
}

/**
 * Cleans the export files under `dir`: JSON Lines and Parquet files (exports, a Hugging Face folder's data) lose
 * the person's rows (bot/export/scrub.ts). Every other file, symbolic links and the protected folders are left
 * alone. A file that cannot be cleaned is left as it was and listed.
 */
async function scrubDir(dir: string, owner: RowOwner, fenced: string[], out: FileOutcome): Promise<void> {
  if (fenced.some((f) => isInside(dir, f))) return;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return; // a folder that does not exist holds nothing
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      await scrubDir(path, owner, fenced, out);
      continue;
    }
    if (!e.isFile()) continue;
    try {
      await scrubFile(path, e.name, owner, out);
    } catch (err) {
      if (!(err instanceof ScrubError)) throw err;
      out.failed.push({ path, reason: err.message });
    }
  }
}

async function scrubFile(path: string, name: string, owner: RowOwner, out: FileOutcome): Promise<void> {
  const jsonl = /\.jsonl$/i.test(name);
  const { size } = await lstat(path);
  const parquet = !jsonl && (await isParquetFile(path, size));
  if (!jsonl && !parquet) {
    if (/\.parquet$/i.test(name))
      throw new ScrubError(`${path}: named .parquet but not a Parquet file; the file was left as it was`);
    return;
  }
  if (size > MAX_SCAN_BYTES)
    throw new ScrubError(
      `${path}: larger than ${MAX_SCAN_BYTES / 2 ** 20} MiB: not searched; the file was left as it was`,
    );
  const r: ScrubCount = jsonl ? await scrubJsonl(path, owner) : await scrubParquet(path, owner);
  if (r.removed) {
    out.rewritten.push(path);
    if (parquet) {
      const card = await updateHfCardRows(path, r.kept);
      if (card && !out.rewritten.includes(card)) out.rewritten.push(card);
    }
  }
  if (r.unidentified) {
    out.failed.push({
      path,
      reason: `${path}: ${r.unidentified} row(s) carry no session id or pseudonym, so whose they are cannot be told (an export made before they were added?); they were kept`,
    });
  }
}

/** The receipt as the person (or operator) reads it. */
export function formatReceipt(r: DeletionReceipt): string {
  return [
    `Deleted: ${r.sessions} session(s) with ${r.turns} message(s), ${r.ratings} rating(s).`,
    `Threads removed from Discord: ${r.threadIds.length}. Export files rewritten without your rows: ${r.filesRewritten.length}.`,
    `Audit entries pseudonymised: ${r.auditRows}.`,
    ...(r.policiesMarked.length
      ? [
          `Model versions trained on your sessions, marked so that nobody deploys, re-trains or publishes them unknowingly (their files are not changed; an operator decides whether to delete them): ${r.policiesMarked.join(', ')}.`,
        ]
      : []),
    ...(r.filesFailed.length
      ? [
          `Files that could NOT be fully cleaned (an operator must check, clean or delete them): ${r.filesFailed.map((f) => f.reason).join('; ')}`,
        ]
      : []),
    ...(r.paySessionsKept
      ? [
          `Kept so that you are paid: ${r.paySessionsKept} answered study session(s), under the keyed hash, as success and active time only (no text).`,
        ]
      : []),
    `Your id is no longer stored; a keyed hash stands in for it so that a ban still applies. Receipt time ${r.at.toISOString()}.`,
  ].join('\n');
}
