// Our full record as Parquet, through hyparquet-writer, one row group per batch: only the batch being encoded
// is in memory, and each finished row group goes straight to the output stream.
//
// Layout: one row per session, flat scalar columns, and the nested parts as standard 3-level LIST columns
// (turns and ratings as list<struct>, test cases as list<string>), which pyarrow, pandas (lists of dicts) and
// Hugging Face datasets (sequences of dicts) load as they are. The free-form evaluation detail is a JSON string.
import type { Writable } from 'node:stream';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { ExportRecord } from './record.ts';
import { writeChunk, type RecordSink } from './sink.ts';

type El = { name: string; num_children?: number; [k: string]: unknown };

const req = 'REQUIRED';
const opt = 'OPTIONAL';
const str = (name: string, repetition = req): El => ({ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: repetition });
const i32 = (name: string, repetition = req): El => ({ name, type: 'INT32', repetition_type: repetition });
const i64 = (name: string, repetition = req): El => ({ name, type: 'INT64', repetition_type: repetition });
const f64 = (name: string, repetition = req): El => ({ name, type: 'DOUBLE', repetition_type: repetition });
const bool = (name: string, repetition = req): El => ({ name, type: 'BOOLEAN', repetition_type: repetition });
const ts = (name: string, repetition = req): El => ({
  name,
  type: 'INT64',
  repetition_type: repetition,
  logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' },
});
/** A 3-level LIST of `element` (a leaf or a struct with children). */
function list(name: string, repetition: string, element: El, children: El[] = []): El[] {
  return [
    { name, repetition_type: repetition, converted_type: 'LIST', num_children: 1 },
    { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    { ...element, name: 'element', ...(children.length ? { num_children: children.length, repetition_type: req } : {}) },
    ...children,
  ];
}

const TURN_FIELDS: El[] = [
  i32('index'), str('role'), str('content'), str('raw_output', opt), i32('prompt_tokens', opt), i32('completion_tokens', opt),
  i32('latency_ms', opt), ts('created_at'), i64('offset_ms'),
];
const RATING_FIELDS: El[] = [str('rater'), i32('value'), str('comment', opt), ts('created_at')];

/** Top-level columns in file order; `leaf` is the schema of a flat column, `nested` of a LIST column. */
const COLUMNS: { name: string; schema: El[] }[] = [
  { name: 'session_id', schema: [str('session_id')] },
  { name: 'started_at', schema: [ts('started_at')] },
  { name: 'ended_at', schema: [ts('ended_at', opt)] },
  { name: 'duration_ms', schema: [i64('duration_ms', opt)] },
  { name: 'status', schema: [str('status')] },
  { name: 'end_reason', schema: [str('end_reason', opt)] },
  { name: 'channel', schema: [str('channel')] },
  { name: 'simulated', schema: [bool('simulated')] },
  { name: 'turn_count', schema: [i32('turn_count')] },
  { name: 'answer', schema: [str('answer', opt)] },
  { name: 'reward', schema: [f64('reward', opt)] },
  { name: 'consent_version', schema: [i32('consent_version', opt)] },
  { name: 'task_id', schema: [str('task_id')] },
  { name: 'kind', schema: [str('kind')] },
  { name: 'source', schema: [str('source')] },
  { name: 'external_id', schema: [str('external_id', opt)] },
  { name: 'split', schema: [str('split')] },
  { name: 'problem_description', schema: [str('problem_description')] },
  { name: 'ground_truth', schema: [str('ground_truth')] },
  { name: 'test_cases', schema: list('test_cases', opt, str('element')) },
  { name: 'participant', schema: [str('participant')] },
  { name: 'participant_role', schema: [str('participant_role')] },
  { name: 'policy_id', schema: [str('policy_id', opt)] },
  { name: 'policy_name', schema: [str('policy_name', opt)] },
  { name: 'policy_algorithm', schema: [str('policy_algorithm', opt)] },
  { name: 'score', schema: [f64('score', opt)] },
  { name: 'success', schema: [bool('success', opt)] },
  { name: 'tests_passed', schema: [i32('tests_passed', opt)] },
  { name: 'tests_total', schema: [i32('tests_total', opt)] },
  { name: 'metric', schema: [str('metric', opt)] },
  { name: 'evaluator_version', schema: [str('evaluator_version', opt)] },
  { name: 'evaluation_detail', schema: [str('evaluation_detail', opt)] },
  { name: 'rating_mean', schema: [f64('rating_mean', opt)] },
  { name: 'ratings', schema: list('ratings', req, { name: 'element' }, RATING_FIELDS) },
  { name: 'flagged', schema: [bool('flagged')] },
  { name: 'turns', schema: list('turns', req, { name: 'element' }, TURN_FIELDS) },
];

export const PARQUET_COLUMNS = COLUMNS.map((c) => c.name);

/** A Hugging Face `datasets` feature as the dataset card's YAML declares it. */
export type HfFeature = { name: string; dtype: string } | { name: string; list: string | HfFeature[] };

function hfDtype(e: El): string {
  const logical = e.logical_type as { type?: string; unit?: string; isAdjustedToUTC?: boolean } | undefined;
  if (logical?.type === 'TIMESTAMP') return `timestamp[${logical.unit === 'MILLIS' ? 'ms' : logical.unit === 'MICROS' ? 'us' : 'ns'}${logical.isAdjustedToUTC ? ', tz=UTC' : ''}]`;
  switch (e.type) {
    case 'BYTE_ARRAY':
      return 'string';
    case 'INT32':
      return 'int32';
    case 'INT64':
      return 'int64';
    case 'DOUBLE':
      return 'float64';
    case 'BOOLEAN':
      return 'bool';
  }
  throw new Error(`no Hugging Face dtype for parquet column ${e.name} (${String(e.type)})`);
}

/**
 * The features of our Parquet rows in the dataset card's terms, derived from the one schema above: scalars by
 * dtype, LIST columns as `list:` of a dtype or of struct fields (what `datasets` infers from the same file).
 */
export function hfFeatures(): HfFeature[] {
  return COLUMNS.map(({ name, schema }) => {
    if (schema.length === 1) return { name, dtype: hfDtype(schema[0]!) };
    const [, , element, ...children] = schema;
    return children.length ? { name, list: children.map((c) => ({ name: c.name, dtype: hfDtype(c) })) } : { name, list: hfDtype(element!) };
  });
}

function parquetSchema(): El[] {
  return [{ name: 'root', num_children: COLUMNS.length }, ...COLUMNS.flatMap((c) => c.schema)];
}

const date = (iso: string | null) => (iso === null ? null : new Date(iso));

/** Column values of one batch, in COLUMNS order. */
function columnsOf(batch: ExportRecord[]): { name: string; data: unknown[] }[] {
  const pick: Record<string, (r: ExportRecord) => unknown> = {
    session_id: (r) => r.session.id,
    started_at: (r) => date(r.session.startedAt),
    ended_at: (r) => date(r.session.endedAt),
    duration_ms: (r) => (r.session.durationMs === null ? null : BigInt(r.session.durationMs)),
    status: (r) => r.session.status,
    end_reason: (r) => r.session.endReason,
    channel: (r) => r.session.channel,
    simulated: (r) => r.session.simulated,
    turn_count: (r) => r.session.turnCount,
    answer: (r) => r.session.answer,
    reward: (r) => r.session.reward,
    consent_version: (r) => r.session.consentVersion,
    task_id: (r) => r.task.id,
    kind: (r) => r.task.kind,
    source: (r) => r.task.source,
    external_id: (r) => r.task.externalId,
    split: (r) => r.task.split,
    problem_description: (r) => r.task.problemDescription,
    ground_truth: (r) => r.task.groundTruth,
    test_cases: (r) => r.task.testCases,
    participant: (r) => r.participant.pseudonym,
    participant_role: (r) => r.participant.role,
    policy_id: (r) => r.policyVersion?.id ?? null,
    policy_name: (r) => r.policyVersion?.name ?? null,
    policy_algorithm: (r) => r.policyVersion?.algorithm ?? null,
    score: (r) => r.evaluation?.score ?? null,
    success: (r) => r.evaluation?.success ?? null,
    tests_passed: (r) => r.evaluation?.testsPassed ?? null,
    tests_total: (r) => r.evaluation?.testsTotal ?? null,
    metric: (r) => r.evaluation?.metric ?? null,
    evaluator_version: (r) => r.evaluation?.evaluatorVersion ?? null,
    evaluation_detail: (r) => (r.evaluation ? JSON.stringify(r.evaluation.detail) : null),
    rating_mean: (r) => r.ratingMean,
    ratings: (r) => r.ratings.map((x) => ({ rater: x.rater, value: x.value, comment: x.comment, created_at: new Date(x.createdAt) })),
    flagged: (r) => r.flags.some((f) => f.resolvedAt === null),
    turns: (r) =>
      r.turns.map((t) => ({
        index: t.index,
        role: t.role,
        content: t.content,
        raw_output: t.rawOutput,
        prompt_tokens: t.promptTokens,
        completion_tokens: t.completionTokens,
        latency_ms: t.latencyMs,
        created_at: new Date(t.createdAt),
        offset_ms: BigInt(t.offsetMs),
      })),
  };
  return COLUMNS.map(({ name }) => ({ name, data: batch.map(pick[name]!) }));
}

/** A hyparquet Writer whose flush (called after every row group) hands the bytes to a Node stream. */
class StreamByteWriter extends ByteWriter {
  constructor(private readonly out: Writable) {
    super(1 << 20);
  }
  flush(): Promise<void> {
    // Copy: the buffer is reused for the next row group while the stream may still hold this chunk.
    const chunk = Buffer.from(new Uint8Array(this.buffer, 0, this.index));
    this.index = 0;
    return writeChunk(this.out, chunk);
  }
  override finish(): void {
    // The footer is flushed by parquetSink.finish (which can await); nothing to do here.
  }
}

export function parquetSink(out: Writable, kvMetadata: Record<string, string> = {}): RecordSink<ExportRecord> {
  const writer = new StreamByteWriter(out);
  const pw = new ParquetWriter({
    writer,
    schema: parquetSchema() as never,
    // An empty list in the footer is written with a BYTE element type, which strict thrift readers (arrow-rs)
    // reject: leave the field out instead.
    ...(Object.keys(kvMetadata).length ? { kvMetadata: Object.entries(kvMetadata).map(([key, value]) => ({ key, value })) } : {}),
    createdBy: 'sweetloop export (hyparquet-writer)',
    // Long texts rarely repeat outside the task columns; per-column min/max of 16-byte prefixes is still cheap.
    statistics: true,
  });
  return {
    async write(batch) {
      if (batch.length === 0) return;
      await pw.write({ columnData: columnsOf(batch) as never, rowGroupSize: batch.length });
    },
    async finish() {
      pw.finish();
      await writer.flush();
    },
  };
}
