// What an export takes out of the database, before any writer runs: the options every format shares, the
// checked selection (filters, the study named and its k-blocks, the one task kind of a sweet-rl file, the
// pseudonym key) and the selected sessions as our records (record.ts), page by page. The writers are in
// export.ts (a file or a stream) and hf.ts (a Hugging Face dataset folder).
import type { PrismaClient } from '../../prisma/generated/client.ts';
import type { Renderer } from '../../tasks/render.ts';
import { findStudy } from '../../prisma/study-store.ts';
import type { FlagExclusions } from '../../prisma/moderation-store.ts';
import type { ExportFormat, StudyCard } from './card.ts';
import type { ExportStats } from './stats.ts';
import { pseudonymizer } from './pseudonym.ts';
import { TRAINING_FORMATS } from './training-card.ts';
import {
  countSessions,
  resolvePolicyFilter,
  describeSteps,
  partialTasks,
  selectedKinds,
  selectionSteps,
  streamSessions,
  validateFilters,
  type ExportFilters,
} from './query.ts';
import { toRecord, type ExportRecord } from './record.ts';

export const EXPORT_FORMATS: readonly ExportFormat[] = ['sweet-rl', 'jsonl', 'parquet', 'hf', ...TRAINING_FORMATS];

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
  /**
   * trl-dpo: also the per-turn pairs of a SWEET-RL run's candidates: the run's id (its actor-pairs.jsonl) or the
   * path of such a file (trainer/actor.ts readActorPairs).
   */
  candidates?: string;
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
  /** Write the file (and its card) even when no session is selected; otherwise that is an EmptyExportError. */
  allowEmpty?: boolean;
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
  /** Set when nothing was written: why (which filter left how many sessions). */
  empty?: string;
  /** Sessions the other filters chose that unresolved moderation flags kept out, and why. */
  flagged?: FlagExclusions;
}

export class ExportError extends Error {}

/** Nothing to export, and the caller did not allow an empty file: the message says which filter left how many. */
export class EmptyExportError extends ExportError {}

export interface Prepared {
  filters: ExportFilters;
  now: Date;
  excludeComments: boolean;
  pseudonym: (id: string) => string;
  /** sweet-rl: the one task kind of the selection. */
  kind: 'backend' | 'frontend' | null;
  study: StudyCard | null;
  /** Null when sessions are selected; otherwise why none are (query.ts describeSteps). */
  empty: string | null;
}

/** The study named by `opts.study`: its filter, its k as the sweet-rl blocks, and what the card says of it. */
async function studyOf(
  prisma: PrismaClient,
  opts: ExportOptions,
  filters: ExportFilters,
): Promise<{ filters: ExportFilters; study: StudyCard | null }> {
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

export async function prepare(prisma: PrismaClient, opts: ExportOptions): Promise<Prepared> {
  if (!EXPORT_FORMATS.includes(opts.format))
    throw new ExportError(`unknown format "${opts.format}" (expected ${EXPORT_FORMATS.join(', ')})`);
  // The reference pipeline needs a reward (the evaluation's score) and an assistant entry on every trajectory.
  const { filters: chosen, study } = await studyOf(prisma, opts, {
    ...opts.filters,
    ...(opts.format === 'sweet-rl' ? { requireTrajectory: true } : {}),
  });
  validateFilters(chosen);
  const filters = await resolvePolicyFilter(prisma, chosen);
  if (filters.perTask !== undefined && opts.format !== 'sweet-rl')
    throw new ExportError('--per-task arranges sweet-rl blocks: use it with --format sweet-rl');
  const pseudonym = pseudonymizer(opts.salt);
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
  // Checked before any file is opened: an empty export is refused with its reason, or (allowEmpty) carries it.
  const empty =
    (await countSessions(prisma, filters)) === 0 ? describeSteps(await selectionSteps(prisma, filters)) : null;
  if (empty !== null && !opts.allowEmpty)
    throw new EmptyExportError(
      `nothing to export: ${empty}. Nothing was written (--allow-empty writes the empty file and its card).`,
    );
  return {
    filters,
    now: opts.now ?? new Date(),
    excludeComments: opts.excludeComments ?? false,
    pseudonym,
    kind,
    study,
    empty,
  };
}

/** The selected sessions as our records, page by page (`batchSize` a page: a Parquet row group). */
export async function* recordPages(
  prisma: PrismaClient,
  opts: Pick<ExportOptions, 'batchSize'>,
  p: Prepared,
): AsyncGenerator<ExportRecord[]> {
  for await (const page of streamSessions(prisma, p.filters, opts.batchSize ?? 500)) {
    yield page.map((s) => toRecord(s, { pseudonym: p.pseudonym, excludeComments: p.excludeComments }));
  }
}
