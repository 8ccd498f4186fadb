// The export request as both front ends take it: the command line (`sweetloop export`) and the bot's `/mod export`
// parse their inputs into this one schema, so they offer the same formats and filters with the same checks.
//
//   const req = parseExportRequest({ format: 'sweet-rl', kind: 'backend', perTask: 2, source: 'both' });
//   const r = await exportForModerator(prisma, req, { salt, maxBytes: 8 * 1024 * 1024, serverDir: '/data/exports' });
//   if (r.delivery === 'attachment') reply with r.files (name + bytes); else tell the moderator r.path.
import { randomBytes } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { exportSessions, EXPORT_FORMATS, type ExportResult } from './export.ts';
import type { ExportFilters } from './query.ts';
import { DATA_SOURCES, DEFAULT_DATA_SOURCE } from '../../prisma/data-source.ts';

const STATUSES = ['active', 'answered', 'abandoned', 'expired'] as const;

/** A date given as a Date or as text such as 2026-03-01 or 2026-03-01T12:00:00Z. */
const dateSchema = z.union([z.date(), z.string().trim().min(1)]).transform((v, ctx) => {
  const d = v instanceof Date ? v : new Date(v);
  if (Number.isNaN(d.getTime())) {
    ctx.addIssue({ code: 'custom', message: 'expected a date such as 2026-03-01 or 2026-03-01T12:00:00Z' });
    return z.NEVER;
  }
  return d;
});

export const exportRequestSchema = z
  .object({
    format: z.enum(EXPORT_FORMATS as [string, ...string[]]).transform((f) => f as (typeof EXPORT_FORMATS)[number]),
    kind: z.enum(['backend', 'frontend']).optional(),
    split: z.enum(['train', 'test']).optional(),
    since: dateSchema.optional(),
    until: dateSchema.optional(),
    policy: z.string().trim().min(1, 'empty policy name').optional(),
    /** Session statuses; default: answered only. */
    status: z.array(z.enum(STATUSES)).min(1, 'give at least one status').optional(),
    minRating: z.number().min(1).max(5).optional(),
    /** Who played the collaborator. */
    source: z.enum(DATA_SOURCES).default(DEFAULT_DATA_SOURCE),
    includeFlagged: z.boolean().default(false),
    excludeComments: z.boolean().default(false),
    /** sweet-rl: tasks with at least K sessions, written as K blocks. */
    perTask: z.number().int().min(1).optional(),
    /** sweet-rl: 'llama3', 'chatml' or a tokenizer_config.json path under the working directory (bot/export/chat-template.ts). */
    chatTemplate: z.string().trim().min(1).default('llama3'),
  })
  .strict()
  .superRefine((r, ctx) => {
    // since < until is checked with the other filters (query.ts validateFilters).
    if (r.perTask !== undefined && r.format !== 'sweet-rl')
      ctx.addIssue({ code: 'custom', path: ['perTask'], message: 'only with the sweet-rl format' });
  });

export type ExportRequest = z.output<typeof exportRequestSchema>;
export type ExportRequestInput = z.input<typeof exportRequestSchema>;

export class ExportRequestError extends Error {}

/** Checks a request from either front end; the message names each bad field. */
export function parseExportRequest(input: unknown): ExportRequest {
  const r = exportRequestSchema.safeParse(input);
  if (!r.success) {
    throw new ExportRequestError(
      r.error.issues.map((i) => `${i.path.join('.') || 'request'}: ${i.message}`).join('; '),
    );
  }
  return r.data;
}

/** The query filters a request selects. */
export function filtersOf(r: ExportRequest): ExportFilters {
  return {
    ...(r.since ? { since: r.since } : {}),
    ...(r.until ? { until: r.until } : {}),
    ...(r.kind ? { kind: r.kind } : {}),
    ...(r.split ? { split: r.split } : {}),
    ...(r.policy ? { policy: r.policy } : {}),
    ...(r.minRating !== undefined ? { minRating: r.minRating } : {}),
    ...(r.status ? { statuses: [...r.status] } : {}),
    ...(r.perTask !== undefined ? { perTask: r.perTask } : {}),
    source: r.source,
    includeFlagged: r.includeFlagged,
  };
}

/** The file extension of a format's main file (hf is a folder). */
export function extensionOf(format: ExportRequest['format']): string {
  return {
    'sweet-rl': '.sweet-rl.jsonl',
    jsonl: '.jsonl',
    parquet: '.parquet',
    hf: '',
    'trl-sft': '.trl-sft.jsonl',
    'trl-dpo': '.trl-dpo.jsonl',
    'verl-rl': '.verl-rl.parquet',
    'verl-sft': '.verl-sft.parquet',
  }[format];
}

export interface ModeratorExportOptions {
  salt: string;
  defaultSalt?: boolean;
  /** Largest total size sent back as attachments (Discord's upload limit for the server). */
  maxBytes: number;
  /** Folder on the server where exports over the limit (and those with many files) are kept. */
  serverDir: string;
  chromiumPath?: string;
  now?: Date;
  /** Filters the requester cannot lift (a guild moderator sees only their guild's sessions). */
  scope?: Pick<ExportFilters, 'guildIds'>;
}

export type ModeratorExport = {
  sessions: number;
  turns: number;
  cardMarkdown: string;
} & (
  | { delivery: 'attachment'; files: { name: string; data: Buffer }[] }
  /** Too big (or a folder): kept on the server; tell the moderator where. */
  | { delivery: 'server'; path: string; cardPath: string; bytes: number }
);

function sizeOf(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.size;
  return readdirSync(path).reduce((a, name) => a + sizeOf(join(path, name)), 0);
}

/**
 * Runs an export for `/mod export`. It is written under `serverDir` first (never held in memory whole); a single
 * file that fits in `maxBytes` together with its card comes back as attachments and is removed from the server,
 * anything else (over the limit, an `hf` folder, a frontend export with its screenshots) stays there and its path
 * is returned.
 */
export async function exportForModerator(
  prisma: PrismaClient,
  input: ExportRequestInput | ExportRequest,
  o: ModeratorExportOptions,
): Promise<ModeratorExport> {
  const req = parseExportRequest(input);
  const now = o.now ?? new Date();
  await mkdir(o.serverDir, { recursive: true });
  const stamp = now.toISOString().replace(/[:.]/g, '-');
  const name = `sweetloop-${stamp}-${randomBytes(3).toString('hex')}${extensionOf(req.format)}`;
  const path = join(o.serverDir, name);
  const result: ExportResult = await exportSessions(
    prisma,
    {
      format: req.format,
      filters: { ...filtersOf(req), ...o.scope },
      salt: o.salt,
      excludeComments: req.excludeComments,
      chatTemplate: req.chatTemplate,
      ...(o.chromiumPath ? { chromiumPath: o.chromiumPath } : {}),
      defaultSalt: o.defaultSalt ?? false,
      now,
    },
    path,
  );
  const cardPath = result.cardPath!;
  const bytes = sizeOf(path) + (result.assetsDir ? sizeOf(result.assetsDir) : 0);
  const base = { sessions: result.sessions, turns: result.turns, cardMarkdown: result.cardMarkdown };
  const single = req.format !== 'hf' && !result.assetsDir;
  if (single && bytes + Buffer.byteLength(result.cardMarkdown) <= o.maxBytes) {
    const files = [
      { name, data: await readFile(path) },
      { name: `${name}.README.md`, data: Buffer.from(result.cardMarkdown) },
    ];
    await rm(path, { force: true });
    await rm(cardPath, { force: true });
    return { ...base, delivery: 'attachment', files };
  }
  return { ...base, delivery: 'server', path, cardPath, bytes };
}
