// Storing tasks: a batch goes in whole or not at all, and a task already stored (same content hash) is skipped,
// so importing the same file twice changes nothing.
import type { Prisma, PrismaClient } from './generated/client.ts';
import type { TaskContent, TaskKind, TaskRecord, TaskSource, TaskSplit } from '../tasks/model.ts';
import { contentHash, taskRecordSchema, type LineError } from '../tasks/importer.ts';

export interface ImportCounts {
  /** Newly stored tasks. */
  inserted: number;
  /** Tasks already stored (or repeated within this batch), skipped. */
  duplicates: number;
  /** Records refused by validation, not stored. */
  invalid: number;
  /** Why each refused record was refused; `line` is its position in the batch (1-based) unless it carried one. */
  errors: LineError[];
}

export interface ImportOptions {
  /** Overrides every record's split. */
  split?: TaskSplit;
  /** Rows per INSERT statement (all of them run in one transaction). */
  chunkSize?: number;
}

/**
 * Stores a batch of tasks in one transaction: either every new task is stored or, on any database error,
 * none is (the error propagates). Records are validated again here, since callers such as the built-in
 * library hand them over without going through a file.
 */
export async function importTasks(
  prisma: PrismaClient,
  records: readonly (TaskRecord & { contentHash?: string; line?: number })[],
  options: ImportOptions = {},
): Promise<ImportCounts> {
  const chunkSize = options.chunkSize ?? 500;
  const errors: LineError[] = [];
  const data: Prisma.TaskCreateManyInput[] = [];
  const seen = new Set<string>();
  let duplicates = 0;

  records.forEach((record, i) => {
    const line = record.line ?? i + 1;
    const { contentHash: _hash, line: _line, ...plain } = record;
    const parsed = taskRecordSchema.safeParse(options.split ? { ...plain, split: options.split } : plain);
    if (!parsed.success) {
      errors.push({
        line,
        reason: parsed.error.issues.map((x) => `${x.path.join('.') || 'record'}: ${x.message}`).join('; '),
      });
      return;
    }
    const task = parsed.data as TaskRecord;
    const hash = contentHash(task);
    if (seen.has(hash)) {
      duplicates++;
      return;
    }
    seen.add(hash);
    data.push({
      kind: task.kind,
      source: task.source,
      externalId: task.externalId,
      contentHash: hash,
      description: task.description,
      hiddenReference: task.reference,
      ...(task.kind === 'backend' ? { testCases: task.testCases } : {}),
      split: task.split,
      ...(task.meta !== undefined ? { meta: task.meta as Prisma.InputJsonObject } : {}),
    });
  });

  let inserted = 0;
  if (data.length > 0) {
    inserted = await prisma.$transaction(
      async (tx) => {
        let count = 0;
        for (let i = 0; i < data.length; i += chunkSize) {
          // ON CONFLICT DO NOTHING on the unique content hash: stored tasks (even ones a concurrent import
          // just added) are skipped rather than failing the batch.
          const result = await tx.task.createMany({ data: data.slice(i, i + chunkSize), skipDuplicates: true });
          count += result.count;
        }
        return count;
      },
      { timeout: 120_000, maxWait: 30_000 },
    );
  }
  duplicates += data.length - inserted;
  return { inserted, duplicates, invalid: errors.length, errors };
}

export interface TaskSummaryRow {
  kind: TaskKind;
  source: TaskSource;
  split: TaskSplit;
  count: number;
}

/** How many tasks are stored, by kind, source and split (sorted for a stable table). */
export async function listTasks(prisma: PrismaClient): Promise<TaskSummaryRow[]> {
  const groups = await prisma.task.groupBy({ by: ['kind', 'source', 'split'], _count: { _all: true } });
  return groups
    .map((g) => ({ kind: g.kind, source: g.source, split: g.split, count: g._count._all }))
    .sort((a, b) => a.kind.localeCompare(b.kind) || a.source.localeCompare(b.source) || a.split.localeCompare(b.split));
}

/** A stored task as the ColBench environment sees it; a backend task without its list of test calls is refused. */
export function taskContent(task: {
  kind: TaskKind;
  description: string;
  hiddenReference: string;
  testCases: unknown;
}): TaskContent {
  if (task.kind === 'backend') {
    const tests = task.testCases;
    if (!Array.isArray(tests) || !tests.every((t) => typeof t === 'string')) {
      throw new Error('backend task without a list of test calls in testCases');
    }
    return {
      kind: 'backend',
      description: task.description,
      reference: task.hiddenReference,
      testCases: tests as string[],
    };
  }
  return { kind: 'frontend', description: task.description, reference: task.hiddenReference };
}
