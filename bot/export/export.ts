// Exports selected sessions as a dataset file plus its dataset card. Used by `sweetloop export` and by the bot's
// `/mod export`:
//
//   const { sessions, turns, cardMarkdown } = await exportSessions(prisma, {
//     format: 'sweet-rl' | 'jsonl' | 'parquet',
//     filters: { since, until, kind, policy, minRating, split, includeSimulated, includeFlagged, statuses },
//     salt: config.EXPORT_SALT,          // pseudonym key, >= 8 characters
//     excludeComments: false,             // drop rating comments and moderation reasons
//     onProgress: (done, total) => ...,   // optional
//   }, out);
//
// `out` is either a file path or a Writable:
// - path: the data goes to `<path>.partial` and is renamed to `<path>` only when complete (a failed export leaves
//   no file that looks finished); the card is written beside it as `<path>.README.md` (see cardPathFor);
// - Writable (e.g. a PassThrough feeding a Discord attachment): the data is written with back-pressure and the
//   stream is ended when done (pass `end: false` to keep it open); the card is only returned, as cardMarkdown.
//   On failure the promise rejects and the stream is left as it is: the caller destroys it.
// Only consented, not-withdrawn, not-deleted participants' sessions ever leave (see query.ts). Memory stays flat:
// sessions are read by keyset pages of `batchSize` and each page is written before the next is read.
import { open, rename, rm, writeFile } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { basename } from 'node:path';
import type { Writable } from 'node:stream';
import cliProgress from 'cli-progress';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { ExportStats, renderCard, type ExportFormat } from './card.ts';
import { jsonlSink } from './jsonl.ts';
import { parquetSink } from './parquet.ts';
import { pseudonymizer } from './pseudonym.ts';
import { assertPolicyExists, countSessions, streamSessions, validateFilters, type ExportFilters } from './query.ts';
import { toRecord, type ExportRecord } from './record.ts';
import type { RecordSink } from './sink.ts';
import { sweetRlSink } from './sweet-rl.ts';

export const EXPORT_FORMATS: readonly ExportFormat[] = ['sweet-rl', 'jsonl', 'parquet'];
export type { ExportFormat, ExportFilters };

export interface ExportOptions {
  format: ExportFormat;
  filters?: ExportFilters;
  salt: string;
  excludeComments?: boolean;
  /** Sessions read and written per page (a Parquet row group). */
  batchSize?: number;
  onProgress?: (done: number, total: number) => void;
  /** Marks the card with a warning (the CLI sets it when EXPORT_SALT is the development default). */
  defaultSalt?: boolean;
  /** End a Writable `out` when done (default true). */
  end?: boolean;
  now?: Date;
}

export interface ExportResult {
  sessions: number;
  turns: number;
  cardMarkdown: string;
  stats: ExportStats;
  /** Set when `out` was a path. */
  path?: string;
  cardPath?: string;
}

export class ExportError extends Error {}

export function cardPathFor(path: string): string {
  return `${path}.README.md`;
}

function sinkFor(format: ExportFormat, out: Writable, meta: Record<string, string>): RecordSink<ExportRecord> {
  switch (format) {
    case 'sweet-rl':
      return sweetRlSink(out);
    case 'jsonl':
      return jsonlSink(out);
    case 'parquet':
      return parquetSink(out, meta);
  }
}

export async function exportSessions(prisma: PrismaClient, opts: ExportOptions, out: Writable | string): Promise<ExportResult> {
  if (!EXPORT_FORMATS.includes(opts.format)) throw new ExportError(`unknown format "${opts.format}" (expected ${EXPORT_FORMATS.join(', ')})`);
  // The reference pipeline needs a reward on every trajectory.
  const filters: ExportFilters = { ...opts.filters, ...(opts.format === 'sweet-rl' ? { requireReward: true } : {}) };
  validateFilters(filters);
  const pseudonym = pseudonymizer(opts.salt);
  await assertPolicyExists(prisma, filters.policy);
  const excludeComments = opts.excludeComments ?? false;
  const now = opts.now ?? new Date();

  if (typeof out === 'string') return exportToPath(prisma, { ...opts, filters, now }, out);

  const total = opts.onProgress ? await countSessions(prisma, filters) : 0;
  const sink = sinkFor(opts.format, out, { 'sweetloop.filters': JSON.stringify(filters), 'sweetloop.exported_at': now.toISOString() });
  const stats = new ExportStats();
  opts.onProgress?.(0, total);
  for await (const page of streamSessions(prisma, filters, opts.batchSize ?? 500)) {
    const records = page.map((s) => toRecord(s, { pseudonym, excludeComments }));
    await sink.write(records);
    for (const r of records) stats.add(r);
    opts.onProgress?.(stats.sessions, Math.max(total, stats.sessions));
  }
  await sink.finish();
  if (opts.end ?? true) {
    out.end();
    await finished(out);
  }
  const cardMarkdown = renderCard({
    format: opts.format,
    fileName: 'export',
    filters,
    excludeComments,
    stats,
    createdAt: now,
    defaultSalt: opts.defaultSalt ?? false,
  });
  return { sessions: stats.sessions, turns: stats.totalTurns, cardMarkdown, stats };
}

async function exportToPath(prisma: PrismaClient, opts: ExportOptions & { filters: ExportFilters; now: Date }, path: string): Promise<ExportResult> {
  const partial = `${path}.partial`;
  // Opened up front so that a bad path fails here, with the path in the message, before any query runs.
  const handle = await open(partial, 'w');
  const stream = handle.createWriteStream();
  // Write errors (a full disk) surface through writeChunk / finished(); this only keeps them from being
  // thrown as uncaught 'error' events.
  stream.on('error', () => {});
  try {
    const result = await exportSessions(prisma, { ...opts, end: true }, stream);
    const cardMarkdown = renderCard({
      format: opts.format,
      fileName: basename(path),
      filters: opts.filters,
      excludeComments: opts.excludeComments ?? false,
      stats: result.stats,
      createdAt: opts.now,
      defaultSalt: opts.defaultSalt ?? false,
    });
    const cardPath = cardPathFor(path);
    await writeFile(cardPath, cardMarkdown);
    await rename(partial, path);
    return { ...result, cardMarkdown, path, cardPath };
  } catch (err) {
    stream.destroy();
    await rm(partial, { force: true });
    throw err;
  }
}

/** A progress bar on a terminal (none when `stream` is not a TTY, e.g. in CI or a pipe). */
export function terminalProgress(stream: NodeJS.WriteStream, label: string): { onProgress?: (done: number, total: number) => void; stop: () => void } {
  if (!stream.isTTY) return { stop: () => {} };
  const bar = new cliProgress.SingleBar(
    { stream, format: `${label} [{bar}] {percentage}% | {value}/{total} sessions | {eta_formatted} left`, hideCursor: true, etaBuffer: 50 },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    onProgress(done, total) {
      if (!started) {
        bar.start(total, done);
        started = true;
      } else {
        bar.setTotal(total);
        bar.update(done);
      }
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
