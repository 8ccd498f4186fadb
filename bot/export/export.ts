// Exports selected sessions as a dataset plus its dataset card. Used by `sweetloop export` and, through
// options.ts exportForModerator, by the bot's `/mod export`:
//
//   const r = await exportSessions(prisma, {
//     format: 'sweet-rl' | 'jsonl' | 'parquet' | 'hf',
//     filters: { since, until, kind, policy, minRating, split, source, includeFlagged, statuses, perTask },
//     salt: config.EXPORT_SALT,          // pseudonym key, >= 8 characters
//     excludeComments: false,             // drop rating comments and moderation reasons
//     chatTemplate: 'llama3',             // sweet-rl: 'llama3' | 'chatml' | path to a tokenizer_config.json
//     onProgress: (done, total) => ...,   // optional
//     study: 'pilot',                     // optional: that study's sessions; sweet-rl: its complete k-blocks
//   }, out);
//
// `out` is a path or (jsonl, parquet, backend sweet-rl) a Writable:
// - path: the data goes to `<path>.partial` and is renamed to `<path>` only when complete (a failed export leaves
//   no file that looks finished); the card is written beside it as `<path>.README.md` (see cardPathFor). A
//   frontend sweet-rl export also writes the final pages' screenshots into `<path>.screenshots/`;
// - `hf`: `out` is a folder to create (absent or empty): README.md (the card, whose YAML front matter declares
//   the configs and features Hugging Face `datasets` reads) and data/<kind>/<split>.parquet, built in
//   `<out>.partial` and renamed when complete;
// - Writable (e.g. a PassThrough feeding a Discord attachment): the data is written with back-pressure and the
//   stream is ended when done (pass `end: false` to keep it open); the card is only returned, as cardMarkdown.
//   On failure the promise rejects and the stream is left as it is: the caller destroys it.
// Only consented, not-withdrawn, not-deleted participants' sessions ever leave (see query.ts). Memory stays flat:
// sessions are read by keyset pages of `batchSize` and each page is written before the next is read.
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, readdirSync } from 'node:fs';
import { mkdir, open, rename, rm, writeFile } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { basename, dirname, join } from 'node:path';
import type { Writable } from 'node:stream';
import cliProgress from 'cli-progress';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import type { Renderer } from '../../tasks/render.ts';
import { findStudy } from '../../prisma/study-store.ts';
import { ExportStats, renderCard, type CardInput, type ExportFormat, type StudyCard } from './card.ts';
import { resolveChatTemplate } from './chat-template.ts';
import { jsonlSink } from './jsonl.ts';
import { parquetSink } from './parquet.ts';
import { pseudonymizer } from './pseudonym.ts';
import { assertPolicyExists, countSessions, partialTasks, selectedKinds, streamSessions, validateFilters, type ExportFilters } from './query.ts';
import { toRecord, type ExportRecord } from './record.ts';
import type { RecordSink } from './sink.ts';
import { SweetRlStats, sweetRlSink } from './sweet-rl.ts';

export const EXPORT_FORMATS: readonly ExportFormat[] = ['sweet-rl', 'jsonl', 'parquet', 'hf'];
export type { ExportFormat, ExportFilters };

export interface ExportOptions {
  format: ExportFormat;
  filters?: ExportFilters;
  salt: string;
  excludeComments?: boolean;
  /** sweet-rl: how `input` is rendered ('llama3' by default, 'chatml', or a tokenizer_config.json path). */
  chatTemplate?: string;
  /** Frontend sweet-rl: Chromium for the answer screenshots (default /usr/bin/chromium), or a running renderer. */
  chromiumPath?: string;
  renderer?: Renderer;
  /** Sessions read and written per page (a Parquet row group). */
  batchSize?: number;
  onProgress?: (done: number, total: number) => void;
  /** Marks the card with a warning (the CLI sets it when EXPORT_SALT is the development default). */
  defaultSalt?: boolean;
  /** End a Writable `out` when done (default true). */
  end?: boolean;
  now?: Date;
  /**
   * Only the sessions of the study of this name. In the sweet-rl format its tasks are written as k-blocks with
   * the study's k (unless filters.perTask says otherwise): complete blocks only, the partial tasks counted.
   */
  study?: string;
}

export interface ExportResult {
  sessions: number;
  turns: number;
  cardMarkdown: string;
  stats: ExportStats;
  /** Set when `out` was a path (for `hf`, the folder). */
  path?: string;
  cardPath?: string;
  /** Frontend sweet-rl: the folder of the answer screenshots. */
  assetsDir?: string;
  /** With `study`: the study's name, consent version and the tasks with fewer than k sessions left out. */
  study?: StudyCard;
}

export class ExportError extends Error {}

export function cardPathFor(path: string): string {
  return `${path}.README.md`;
}

/** Where a frontend sweet-rl export puts its screenshots, relative to the file's folder. */
export function screenshotsDirFor(path: string): string {
  return `${basename(path)}.screenshots`;
}

interface Prepared {
  filters: ExportFilters;
  now: Date;
  excludeComments: boolean;
  pseudonym: (id: string) => string;
  /** sweet-rl: the one task kind of the selection. */
  kind: 'backend' | 'frontend' | null;
  study: StudyCard | null;
}

/** The study named by `opts.study`: its filter, its k as the sweet-rl blocks, and what the card says of it. */
async function studyOf(prisma: PrismaClient, opts: ExportOptions, filters: ExportFilters): Promise<{ filters: ExportFilters; study: StudyCard | null }> {
  if (opts.study === undefined) return { filters, study: null };
  const s = await findStudy(prisma, opts.study);
  if (!s) throw new ExportError(`no study named "${opts.study}"`);
  const perTask = filters.perTask ?? (opts.format === 'sweet-rl' && s.perTask !== null ? s.perTask : undefined);
  const scoped: ExportFilters = { ...filters, studyId: s.id, ...(perTask !== undefined ? { perTask } : {}) };
  return {
    filters: scoped,
    study: {
      name: s.name,
      perTask: s.perTask,
      split: s.split,
      consentVersion: s.consentVersion,
      consentSha256: s.consentSha256,
      arms: s.arms.map((a) => ({ policy: a.policyVersion.name, share: a.share })),
      payPerSessionCents: s.payPerSessionCents,
      bonusSuccessCents: s.bonusSuccessCents,
      currency: s.currency,
      opensAt: s.opensAt,
      closesAt: s.closesAt,
      partialTasksLeftOut: await partialTasks(prisma, scoped),
    },
  };
}

async function prepare(prisma: PrismaClient, opts: ExportOptions): Promise<Prepared> {
  if (!EXPORT_FORMATS.includes(opts.format)) throw new ExportError(`unknown format "${opts.format}" (expected ${EXPORT_FORMATS.join(', ')})`);
  // The reference pipeline needs a reward (the evaluation's score) and an assistant entry on every trajectory.
  const { filters, study } = await studyOf(prisma, opts, { ...opts.filters, ...(opts.format === 'sweet-rl' ? { requireTrajectory: true } : {}) });
  validateFilters(filters);
  if (filters.perTask !== undefined && opts.format !== 'sweet-rl') throw new ExportError('--per-task arranges sweet-rl blocks: use it with --format sweet-rl');
  const pseudonym = pseudonymizer(opts.salt);
  await assertPolicyExists(prisma, filters.policy);
  let kind: Prepared['kind'] = null;
  if (opts.format === 'sweet-rl') {
    const kinds = await selectedKinds(prisma, filters);
    if (kinds.length > 1) {
      throw new ExportError(
        `the selection holds ${kinds.join(' and ')} sessions, but a sweet-rl file takes one task kind (its scripts score one kind): ` +
          'add --kind backend or --kind frontend',
      );
    }
    kind = kinds[0] ?? filters.kind ?? null;
  }
  return { filters, now: opts.now ?? new Date(), excludeComments: opts.excludeComments ?? false, pseudonym, kind, study };
}

export async function exportSessions(prisma: PrismaClient, opts: ExportOptions, out: Writable | string): Promise<ExportResult> {
  const p = await prepare(prisma, opts);
  if (opts.format === 'hf') {
    if (typeof out !== 'string') throw new ExportError('the hf format writes a dataset folder: give a folder path, not a stream');
    return exportHfFolder(prisma, opts, p, out);
  }
  if (typeof out === 'string') return exportToPath(prisma, opts, p, out);
  return (await exportToStream(prisma, opts, p, out, null)).result;
}

/** Where frontend screenshots go: an absolute folder and the prefix written into `answer`. */
interface Assets {
  dir: string;
  relative: string;
}

async function exportToStream(
  prisma: PrismaClient,
  opts: ExportOptions,
  p: Prepared,
  out: Writable,
  assets: Assets | null,
): Promise<{ result: ExportResult; card: CardInput }> {
  const total = opts.onProgress ? await countSessions(prisma, p.filters) : 0;
  const stats = new ExportStats();
  let sink: RecordSink<ExportRecord> & { accepted?: (r: ExportRecord) => boolean };
  let sweetRl: CardInput['sweetRl'];
  let ownRenderer: Renderer | null = null;
  // Frontend similarity metrics of the exported sessions, named in the card.
  const metrics = new Set<string>();
  const renderer = async (): Promise<Renderer> => {
    if (opts.renderer) return opts.renderer;
    if (!ownRenderer) {
      const { Renderer } = await import('../../tasks/render.ts');
      ownRenderer = await Renderer.launch(opts.chromiumPath ? { executablePath: opts.chromiumPath } : {});
    }
    return ownRenderer;
  };
  switch (opts.format) {
    case 'sweet-rl': {
      const template = resolveChatTemplate(opts.chatTemplate ?? 'llama3');
      const rlStats = new SweetRlStats();
      if (p.kind === 'frontend' && !assets) throw new ExportError('a frontend sweet-rl export writes screenshots beside the file: export to a file path');
      if (assets) await mkdir(assets.dir, { recursive: true });
      sink = sweetRlSink(out, {
        template: template.formatter,
        stats: rlStats,
        ...(assets
          ? {
              async screenshot(r: ExportRecord) {
                const html = r.session.answer ?? '';
                // Named by the page, so equal pages share a file and a re-export names it the same way.
                const name = `${createHash('sha256').update(html).digest('hex').slice(0, 32)}.png`;
                if (!existsSync(join(assets.dir, name))) await writeFile(join(assets.dir, name), (await (await renderer()).render(html)).png);
                if (r.evaluation?.metric) metrics.add(r.evaluation.metric);
                return `${assets.relative}/${name}`;
              },
            }
          : {}),
      });
      sweetRl = { stats: rlStats, template: template.name, kind: p.kind, screenshotsDir: assets?.relative ?? null, metric: null };
      break;
    }
    case 'jsonl':
      sink = jsonlSink(out);
      break;
    case 'parquet':
      sink = parquetSink(out, { 'sweetloop.filters': JSON.stringify(p.filters), 'sweetloop.exported_at': p.now.toISOString() });
      break;
    case 'hf':
      throw new ExportError('the hf format writes a folder (see exportSessions)');
  }
  try {
    opts.onProgress?.(0, total);
    let seen = 0;
    for await (const page of streamSessions(prisma, p.filters, opts.batchSize ?? 500)) {
      const records = page.map((s) => toRecord(s, { pseudonym: p.pseudonym, excludeComments: p.excludeComments }));
      await sink.write(records);
      for (const r of records) if (!sink.accepted || sink.accepted(r)) stats.add(r);
      seen += records.length;
      opts.onProgress?.(seen, Math.max(total, seen));
    }
    await sink.finish();
  } finally {
    if (ownRenderer) await (ownRenderer as Renderer).close();
  }
  if (opts.format === 'sweet-rl' && p.filters.perTask !== undefined && sweetRl!.stats.leftOut.size > 0) {
    // A missing line would shift every later task in its block: the official scripts would pair wrong tasks.
    throw new ExportError(
      `--per-task: ${[...sweetRl!.stats.leftOut.values()].reduce((a, b) => a + b, 0)} selected sessions cannot be trajectories ` +
        `(${[...sweetRl!.stats.leftOut.keys()].join('; ')}), which would break the block layout; narrow the selection`,
    );
  }
  if (opts.end ?? true) {
    out.end();
    await finished(out);
  }
  if (sweetRl && metrics.size) sweetRl.metric = [...metrics].join(', ');
  const card: CardInput = {
    format: opts.format,
    fileName: 'export',
    filters: p.filters,
    excludeComments: p.excludeComments,
    stats,
    createdAt: p.now,
    defaultSalt: opts.defaultSalt ?? false,
    ...(sweetRl ? { sweetRl } : {}),
    ...(p.study ? { study: p.study } : {}),
  };
  const result: ExportResult = {
    sessions: stats.sessions,
    turns: stats.totalTurns,
    cardMarkdown: renderCard(card),
    stats,
    ...(assets ? { assetsDir: assets.dir } : {}),
    ...(p.study ? { study: p.study } : {}),
  };
  return { result, card };
}

async function exportToPath(prisma: PrismaClient, opts: ExportOptions, p: Prepared, path: string): Promise<ExportResult> {
  const partial = `${path}.partial`;
  // Opened up front so that a bad path fails here, with the path in the message, before any query runs.
  const handle = await open(partial, 'w');
  const stream = handle.createWriteStream();
  // Write errors (a full disk) surface through writeChunk / finished(); this only keeps them from being
  // thrown as uncaught 'error' events.
  stream.on('error', () => {});
  // Screenshots go to a .partial folder too, which replaces any earlier one only when the file is complete.
  const finalAssets = join(dirname(path), screenshotsDirFor(path));
  const assets: Assets | null = opts.format === 'sweet-rl' && p.kind === 'frontend' ? { dir: `${finalAssets}.partial`, relative: screenshotsDirFor(path) } : null;
  try {
    if (assets) await rm(assets.dir, { recursive: true, force: true });
    const { result, card } = await exportToStream(prisma, { ...opts, end: true }, p, stream, assets);
    const cardMarkdown = renderCard({ ...card, fileName: basename(path) });
    const cardPath = cardPathFor(path);
    await writeFile(cardPath, cardMarkdown);
    if (assets) {
      await rm(finalAssets, { recursive: true, force: true });
      await rename(assets.dir, finalAssets);
    }
    await rename(partial, path);
    return { ...result, cardMarkdown, path, cardPath, ...(assets ? { assetsDir: finalAssets } : {}) };
  } catch (err) {
    stream.destroy();
    await rm(partial, { force: true });
    if (assets) await rm(assets.dir, { recursive: true, force: true });
    throw err;
  }
}

/** The Hugging Face dataset folder: one Parquet file per task kind and split, and the card with its features. */
async function exportHfFolder(prisma: PrismaClient, opts: ExportOptions, p: Prepared, dir: string): Promise<ExportResult> {
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new ExportError(`${dir} exists and is not empty: the hf format writes a new dataset folder`);
  const partial = `${dir}.partial`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  const total = opts.onProgress ? await countSessions(prisma, p.filters) : 0;
  const meta = { 'sweetloop.filters': JSON.stringify(p.filters), 'sweetloop.exported_at': p.now.toISOString() };
  const files = new Map<string, { kind: string; split: string; path: string; rows: number; stream: Writable; sink: RecordSink<ExportRecord> }>();
  const stats = new ExportStats();
  try {
    opts.onProgress?.(0, total);
    for await (const page of streamSessions(prisma, p.filters, opts.batchSize ?? 500)) {
      const records = page.map((s) => toRecord(s, { pseudonym: p.pseudonym, excludeComments: p.excludeComments }));
      const groups = new Map<string, ExportRecord[]>();
      for (const r of records) {
        const key = `${r.task.kind}/${r.task.split}`;
        const group = groups.get(key);
        if (group) group.push(r);
        else groups.set(key, [r]);
      }
      for (const [key, group] of groups) {
        let f = files.get(key);
        if (!f) {
          const [kind, split] = key.split('/') as [string, string];
          const rel = `data/${kind}/${split}.parquet`;
          await mkdir(join(partial, 'data', kind), { recursive: true });
          const stream = createWriteStream(join(partial, rel));
          stream.on('error', () => {});
          f = { kind, split, path: rel, rows: 0, stream, sink: parquetSink(stream, meta) };
          files.set(key, f);
        }
        await f.sink.write(group);
        f.rows += group.length;
      }
      for (const r of records) stats.add(r);
      opts.onProgress?.(stats.sessions, Math.max(total, stats.sessions));
    }
    for (const f of files.values()) {
      await f.sink.finish();
      f.stream.end();
      await finished(f.stream);
    }
    const kinds = [...new Set([...files.values()].map((f) => f.kind))].sort();
    const hf = kinds.map((kind) => ({
      kind,
      splits: [...files.values()].filter((f) => f.kind === kind).sort((a, b) => b.split.localeCompare(a.split)).map(({ split, path, rows }) => ({ split, path, rows })),
    }));
    const cardMarkdown = renderCard({
      format: 'hf',
      fileName: basename(dir),
      filters: p.filters,
      excludeComments: p.excludeComments,
      stats,
      createdAt: p.now,
      defaultSalt: opts.defaultSalt ?? false,
      hf,
      ...(p.study ? { study: p.study } : {}),
    });
    const cardPath = join(dir, 'README.md');
    await writeFile(join(partial, 'README.md'), cardMarkdown);
    if (existsSync(dir)) await rm(dir, { recursive: true });
    await rename(partial, dir);
    return { sessions: stats.sessions, turns: stats.totalTurns, cardMarkdown, stats, path: dir, cardPath, ...(p.study ? { study: p.study } : {}) };
  } catch (err) {
    for (const f of files.values()) f.stream.destroy();
    await rm(partial, { recursive: true, force: true });
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
