// Reading task files: ColBench's published JSONL and our own export format. Every line is validated on its
// own, so one bad record is reported (with its line number and reason) without costing the good ones.
// Storage is not done here (see prisma/task-store.ts): this module only turns lines into checked records.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { basename } from 'node:path';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import type { BackendTask, TaskContent, TaskKind, TaskRecord, TaskSplit } from './model.ts';

/** Generous upper bounds: real tasks are far smaller, anything larger is a broken or hostile file. */
const MAX_DESCRIPTION = 20_000;
const MAX_REFERENCE = 200_000;
const MAX_TEST_CALL = 10_000;
const MAX_TESTS = 200;

// Postgres text cannot hold NUL; refusing it here gives a line-numbered reason instead of a failed batch.
const text = (max: number) =>
  z
    .string()
    .max(max, `longer than ${max} characters`)
    .refine((s) => s.trim() !== '', 'is empty')
    .refine((s) => !s.includes('\u0000'), 'contains a NUL character');

const testCall = text(MAX_TEST_CALL);

/**
 * ColBench as published; `hidden_information`, when present, repeats ground_truth and is not stored twice. Some
 * copies list `test_cases` as an array, in their order.
 */
const colbenchSchema = z.object({
  problem_description: text(MAX_DESCRIPTION),
  ground_truth: text(MAX_REFERENCE),
  test_cases: z.union([z.array(testCall), z.record(z.string(), testCall)]).optional(),
  hidden_information: z.string().optional(),
});

const sourceSchema = z.enum(['colbench', 'builtin', 'generated']);
const splitSchema = z.enum(['train', 'test']);
const metaSchema = z.record(z.string(), z.unknown()).optional();

/** Our own format: a TaskRecord as JSON (what `exportTaskLine` writes and the library produces). */
export const taskRecordSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('backend'),
    description: text(MAX_DESCRIPTION),
    reference: text(MAX_REFERENCE),
    testCases: z.array(testCall).min(1, 'needs at least one test call').max(MAX_TESTS),
    source: sourceSchema,
    externalId: z.string().max(500),
    split: splitSchema,
    meta: metaSchema,
  }),
  z.object({
    kind: z.literal('frontend'),
    description: text(MAX_DESCRIPTION),
    reference: text(MAX_REFERENCE),
    source: sourceSchema,
    externalId: z.string().max(500),
    split: splitSchema,
    meta: metaSchema,
  }),
]);

export interface LineError {
  line: number;
  reason: string;
}

export type ImportedTask = TaskRecord & {
  /** sha256 of the canonical task content (see contentHash). */
  contentHash: string;
  /** 1-based line in the file it came from. */
  line?: number;
};

export interface ParsedTaskFile {
  tasks: ImportedTask[];
  invalid: LineError[];
  /** Lines whose content repeats an earlier line of the same file. */
  duplicates: { line: number; firstLine: number }[];
  lines: number;
}

export interface ParseTaskOptions {
  kind: TaskKind;
  split: TaskSplit;
  /** Prefix for ColBench records' externalId (`<name>:<line>`), usually the file's base name. */
  name?: string;
}

/** JSON with object keys sorted at every level, so equal content always gives equal text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (value === undefined) return 'null';
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** sha256 (hex) of kind + description + reference + tests: what makes two tasks the same task. */
export function contentHash(task: TaskContent): string {
  const tests = task.kind === 'backend' ? task.testCases : [];
  const canonical = canonicalJson({ kind: task.kind, description: task.description, reference: task.reference, tests });
  return createHash('sha256').update(canonical).digest('hex');
}

/**
 * ColBench numbers its tests test1..test10; order by the number, not by key order or as strings. Keys without a
 * number come after the numbered ones, in the file's order.
 */
function orderedTests(tests: Record<string, string> | string[]): string[] {
  if (Array.isArray(tests)) return tests;
  const keys = Object.keys(tests);
  const num = (k: string) => {
    const m = /(\d+)$/.exec(k);
    return m ? Number(m[1]) : Number.POSITIVE_INFINITY;
  };
  return keys
    .map((k, i) => ({ k, i, n: num(k) }))
    .sort((a, b) => a.n - b.n || a.i - b.i)
    .map(({ k }) => tests[k]!);
}

function describeZodError(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => {
      const path = issue.path.join('.');
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join('; ');
}

/**
 * Validates one record (already JSON-parsed) of either format; returns the task or the reason it is refused.
 * The kind comes from `options.kind`; a record of our own format must agree with it.
 */
export function parseTaskRecord(
  value: unknown,
  options: ParseTaskOptions & { line: number },
): { ok: true; task: ImportedTask } | { ok: false; reason: string } {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return {
      ok: false,
      reason: `expected a JSON object, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`,
    };
  }
  const obj = value as Record<string, unknown>;
  let record: TaskRecord;
  if ('problem_description' in obj || 'ground_truth' in obj) {
    const parsed = colbenchSchema.safeParse(obj);
    if (!parsed.success) return { ok: false, reason: describeZodError(parsed.error) };
    const r = parsed.data;
    const externalId = `${options.name ?? 'colbench'}:${options.line}`;
    const meta: Record<string, unknown> = {};
    if (r.hidden_information !== undefined && r.hidden_information !== r.ground_truth)
      meta.hiddenInformation = r.hidden_information;
    if (options.kind === 'backend') {
      if (r.test_cases === undefined)
        return { ok: false, reason: 'test_cases: missing (a backend task needs its test calls)' };
      const testCases = orderedTests(r.test_cases);
      if (testCases.length === 0)
        return { ok: false, reason: 'test_cases: empty (a backend task needs its test calls)' };
      if (testCases.length > MAX_TESTS) return { ok: false, reason: `test_cases: more than ${MAX_TESTS}` };
      record = {
        kind: 'backend',
        description: r.problem_description,
        reference: r.ground_truth,
        testCases,
        source: 'colbench',
        externalId,
        split: options.split,
      };
    } else {
      if (r.test_cases !== undefined)
        return { ok: false, reason: 'test_cases: present, so this looks like a backend task, but --kind is frontend' };
      record = {
        kind: 'frontend',
        description: r.problem_description,
        reference: r.ground_truth,
        source: 'colbench',
        externalId,
        split: options.split,
      };
    }
    if (Object.keys(meta).length > 0) record.meta = meta;
  } else if ('kind' in obj || 'description' in obj || 'reference' in obj) {
    const parsed = taskRecordSchema.safeParse({ split: options.split, ...obj });
    if (!parsed.success) return { ok: false, reason: describeZodError(parsed.error) };
    if (parsed.data.kind !== options.kind)
      return { ok: false, reason: `kind: the record is ${parsed.data.kind}, but --kind is ${options.kind}` };
    // The split is where the caller puts the batch, not a property of the task.
    record = { ...parsed.data, split: options.split } as TaskRecord;
    if (record.meta === undefined) delete record.meta;
  } else {
    return {
      ok: false,
      reason:
        'not a task: expected ColBench fields (problem_description, ground_truth, test_cases) or ours (kind, description, reference)',
    };
  }
  return { ok: true, task: { ...record, contentHash: contentHash(record), line: options.line } };
}

/**
 * One ColBench backend record (or one of our own) as the task content to score against, or the reason it is
 * refused: the same reading as an import (`tasks score`, and the samples the tests and benchmarks load).
 */
export function parseBackendRecord(value: unknown, line = 1): BackendTask | string {
  const r = parseTaskRecord(value, { kind: 'backend', split: 'test', line });
  if (!r.ok) return r.reason;
  if (r.task.kind !== 'backend') return 'not a backend task';
  return { kind: 'backend', description: r.task.description, reference: r.task.reference, testCases: r.task.testCases };
}

/** Lines of a text file, 1-based, read as a stream (a file of any size never sits in memory whole). */
export async function* readLines(path: string): AsyncGenerator<{ line: number; text: string }> {
  const rl = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  let line = 0;
  for await (const raw of rl) {
    line++;
    yield { line, text: line === 1 ? raw.replace(/^\uFEFF/, '') : raw };
  }
}

/**
 * Validates every line. JSON Lines has no blank lines, so an empty line is reported like any other bad one;
 * a repeated task (same content hash) is kept once and the repeat listed under duplicates.
 */
export async function parseTaskLines(
  lines: Iterable<{ line: number; text: string }> | AsyncIterable<{ line: number; text: string }>,
  options: ParseTaskOptions,
): Promise<ParsedTaskFile> {
  const result: ParsedTaskFile = { tasks: [], invalid: [], duplicates: [], lines: 0 };
  const seen = new Map<string, number>();
  for await (const { line, text: raw } of lines) {
    result.lines++;
    if (raw.trim() === '') {
      result.invalid.push({ line, reason: 'empty line (JSONL needs one JSON object on every line)' });
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      result.invalid.push({ line, reason: `not valid JSON: ${(err as Error).message}` });
      continue;
    }
    const parsed = parseTaskRecord(value, { ...options, line });
    if (!parsed.ok) {
      result.invalid.push({ line, reason: parsed.reason });
      continue;
    }
    const first = seen.get(parsed.task.contentHash);
    if (first !== undefined) {
      result.duplicates.push({ line, firstLine: first });
      continue;
    }
    seen.set(parsed.task.contentHash, line);
    result.tasks.push(parsed.task);
  }
  return result;
}

/** Reads and validates a JSONL task file (ColBench or ours). */
export async function parseTaskFile(
  path: string,
  options: Omit<ParseTaskOptions, 'name'> & { name?: string },
): Promise<ParsedTaskFile> {
  return parseTaskLines(readLines(path), { ...options, name: options.name ?? basename(path) });
}

/** Splits an in-memory JSONL text into numbered lines (a trailing newline does not make an empty line). */
export function splitJsonl(content: string): { line: number; text: string }[] {
  const parts = content.replace(/^\uFEFF/, '').split(/\r?\n/);
  if (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
  return parts.map((text, i) => ({ line: i + 1, text }));
}

/** One line of our own format for a task (what the importer reads back unchanged). */
export function exportTaskLine(task: TaskRecord): string {
  const { kind, description, reference, source, externalId, split, meta } = task;
  const out: Record<string, unknown> = { kind, description, reference };
  if (task.kind === 'backend') out.testCases = task.testCases;
  Object.assign(out, { source, externalId, split });
  if (meta !== undefined) out.meta = meta;
  return JSON.stringify(out);
}
