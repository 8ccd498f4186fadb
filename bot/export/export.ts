// Exports selected sessions as a dataset plus its dataset card. Used by `sweetloop export` and, through
// options.ts exportForModerator, by the bot's `/mod export`:
//
//   const r = await exportSessions(prisma, {
//     format: 'sweet-rl' | 'jsonl' | 'parquet' | 'hf' | 'trl-sft' | 'trl-dpo' | 'verl-rl' | 'verl-sft',
//     filters: { since, until, kind, policy, minRating, split, source, includeFlagged, statuses, perTask },
//     salt: config.EXPORT_SALT,          // pseudonym key, >= 8 characters
//     excludeComments: false,             // drop rating comments and moderation reasons
//     chatTemplate: 'llama3',             // sweet-rl: 'llama3' | 'chatml' | path to a tokenizer_config.json
//     onProgress: (done, total) => ...,   // optional
//     study: 'pilot',                     // optional: that study's sessions; sweet-rl: its complete k-blocks
//     candidates: RUN_ID,                 // trl-dpo: also per-turn pairs of a SWEET-RL run's candidates
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
// What is selected, and the records built from it, is prepare.ts; the hf folder is hf.ts.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, open, rename, rm, writeFile } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { basename, dirname, join } from 'node:path';
import type { Writable } from 'node:stream';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import type { Renderer } from '../../tasks/render.ts';
import { renderCard, type CardInput } from './card.ts';
import { ExportStats } from './stats.ts';
import { resolveChatTemplate } from './chat-template.ts';
import { exportHfFolder } from './hf.ts';
import { jsonlSink } from './jsonl.ts';
import { parquetSink } from './parquet.ts';
import {
  EmptyExportError,
  ExportError,
  prepare,
  recordPages,
  type ExportOptions,
  type ExportResult,
  type Prepared,
} from './prepare.ts';
import { countSessions, flaggedOut } from './query.ts';
import { flagExclusions } from '../../prisma/moderation-store.ts';
import type { ExportRecord } from './record.ts';
import type { RecordSink } from './sink.ts';
import { NotATrajectoryError, SweetRlStats, sweetRlSink } from './sweet-rl.ts';
import { trainingSink } from './training-formats.ts';

export { EXPORT_FORMATS, EmptyExportError, ExportError, type ExportOptions, type ExportResult } from './prepare.ts';
export type { ExportFormat } from './card.ts';

export function cardPathFor(path: string): string {
  return `${path}.README.md`;
}

/** Where a frontend sweet-rl export puts its screenshots, relative to the file's folder. */
export function screenshotsDirFor(path: string): string {
  return `${basename(path)}.screenshots`;
}

export async function exportSessions(
  prisma: PrismaClient,
  opts: ExportOptions,
  out: Writable | string,
): Promise<ExportResult> {
  const p = await prepare(prisma, opts);
  // Said on every export, empty or not: sessions leave silently otherwise.
  const flagged = flagExclusions(await flaggedOut(prisma, p.filters));
  let r: ExportResult;
  if (opts.format === 'hf') {
    if (typeof out !== 'string')
      throw new ExportError('the hf format writes a dataset folder: give a folder path, not a stream');
    r = await exportHfFolder(prisma, opts, p, out);
  } else if (typeof out === 'string') r = await exportToPath(prisma, opts, p, out);
  else r = (await exportToStream(prisma, opts, p, out, null)).result;
  return { ...r, flagged, ...(p.empty !== null ? { empty: p.empty } : {}) };
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
  let training: CardInput['training'];
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
      if (p.kind === 'frontend' && !assets)
        throw new ExportError('a frontend sweet-rl export writes screenshots beside the file: export to a file path');
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
                if (!existsSync(join(assets.dir, name)))
                  await writeFile(join(assets.dir, name), await screenshotOf(r.session.id, html, await renderer()));
                if (r.evaluation?.metric) metrics.add(r.evaluation.metric);
                return `${assets.relative}/${name}`;
              },
            }
          : {}),
      });
      sweetRl = {
        stats: rlStats,
        template: template.name,
        kind: p.kind,
        screenshotsDir: assets?.relative ?? null,
        metric: null,
      };
      break;
    }
    case 'jsonl':
      sink = jsonlSink(out);
      break;
    case 'parquet':
      sink = parquetSink(out, {
        'sweetloop.filters': JSON.stringify(p.filters),
        'sweetloop.exported_at': p.now.toISOString(),
      });
      break;
    case 'hf':
      throw new ExportError('the hf format writes a folder (see exportSessions)');
    default:
      ({ sink, stats: training } = await trainingSink(prisma, opts.format, out, p, opts.candidates));
  }
  try {
    opts.onProgress?.(0, total);
    let seen = 0;
    for await (const records of recordPages(prisma, opts, p)) {
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
  if (stats.sessions === 0 && p.empty === null && !opts.allowEmpty) {
    // Sessions were selected but none could be written (sweet-rl: none a trajectory).
    const why = sweetRl
      ? [...sweetRl.stats.leftOut].map(([reason, n]) => `${n} ${reason}`).join('; ')
      : 'none could be written';
    throw new EmptyExportError(
      `nothing to export: ${await countSessions(prisma, p.filters)} session(s) selected, none written (${why}). Nothing was written (--allow-empty writes the empty file).`,
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
    ...(training ? { training } : {}),
    ...(p.study ? { study: p.study } : {}),
    ...(p.empty !== null ? { empty: p.empty } : {}),
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

async function exportToPath(
  prisma: PrismaClient,
  opts: ExportOptions,
  p: Prepared,
  path: string,
): Promise<ExportResult> {
  const partial = `${path}.partial`;
  // Opened up front so that a bad path fails here, with the path in the message, before any query runs.
  const handle = await open(partial, 'w');
  const stream = handle.createWriteStream();
  // Write errors (a full disk) surface through writeChunk / finished(); this only keeps them from being
  // thrown as uncaught 'error' events.
  stream.on('error', () => {});
  // Screenshots go to a .partial folder too, which replaces any earlier one only when the file is complete.
  const finalAssets = join(dirname(path), screenshotsDirFor(path));
  const assets: Assets | null =
    opts.format === 'sweet-rl' && p.kind === 'frontend'
      ? { dir: `${finalAssets}.partial`, relative: screenshotsDirFor(path) }
      : null;
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

/** The screenshot of a final page; a page the renderer refuses (caps, deadline, crash) leaves its session out, with the reason. */
async function screenshotOf(sessionId: string, html: string, renderer: Renderer): Promise<Buffer> {
  const { RenderError } = await import('../../tasks/render.ts');
  try {
    return (await renderer.render(html)).png;
  } catch (err) {
    if (!(err instanceof RenderError && err.pageFault)) throw err;
    throw new NotATrajectoryError(
      `session ${sessionId}: its final page cannot be rendered (${err.message.replace(/^render: /, '')})`,
    );
  }
}
