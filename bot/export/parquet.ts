// Our full record as Parquet, through hyparquet-writer, one row group per batch: only the batch being encoded
// is in memory, and each finished row group goes straight to the output stream.
//
// Layout: one row per session, flat scalar columns, and the nested parts as standard 3-level LIST columns
// (turns and ratings as list<struct>, test cases as list<string>), which pyarrow, pandas (lists of dicts) and
// Hugging Face datasets (sequences of dicts) load as they are. The free-form evaluation detail is a JSON string.
import type { Writable } from 'node:stream';
import {
  bool,
  f64,
  i32,
  i64,
  list,
  opt,
  parquetRowSink,
  req,
  str,
  ts,
  type El,
  type ParquetColumn,
} from './parquet-writer.ts';
import type { ExportRecord } from './record.ts';
import type { RecordSink } from './sink.ts';

const TURN_FIELDS: El[] = [
  i32('index'),
  str('role'),
  str('content'),
  str('raw_output', opt),
  i32('prompt_tokens', opt),
  i32('completion_tokens', opt),
  i32('latency_ms', opt),
  ts('created_at'),
  i64('offset_ms'),
  str('token_recording', opt),
  ...list('token_ids', opt, i32('element')),
  ...list('token_logprobs', opt, f64('element')),
  str('weights_version', opt),
];
const RATING_FIELDS: El[] = [str('rater'), i32('value'), str('comment', opt), ts('created_at')];

/** Top-level columns in file order; `leaf` is the schema of a flat column, `nested` of a LIST column. */
const COLUMNS: ParquetColumn[] = [
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
  if (logical?.type === 'TIMESTAMP')
    return `timestamp[${logical.unit === 'MILLIS' ? 'ms' : logical.unit === 'MICROS' ? 'us' : 'ns'}${logical.isAdjustedToUTC ? ', tz=UTC' : ''}]`;
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

/** A struct's flattened fields as features: leaves by dtype, a LIST field (3 elements) as `list:` of its element's dtype. */
function structFeatures(fields: El[]): HfFeature[] {
  const out: HfFeature[] = [];
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!;
    if (f.converted_type === 'LIST') {
      out.push({ name: f.name, list: hfDtype(fields[i + 2]!) });
      i += 2;
    } else out.push({ name: f.name, dtype: hfDtype(f) });
  }
  return out;
}

/**
 * The features of our Parquet rows in the dataset card's terms, derived from the one schema above: scalars by
 * dtype, LIST columns as `list:` of a dtype or of struct fields (what `datasets` infers from the same file).
 */
export function hfFeatures(): HfFeature[] {
  return COLUMNS.map(({ name, schema }) => {
    if (schema.length === 1) return { name, dtype: hfDtype(schema[0]!) };
    const [, , element, ...children] = schema;
    return children.length ? { name, list: structFeatures(children) } : { name, list: hfDtype(element!) };
  });
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
    ratings: (r) =>
      r.ratings.map((x) => ({ rater: x.rater, value: x.value, comment: x.comment, created_at: new Date(x.createdAt) })),
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
        token_recording: t.tokenRecording,
        token_ids: t.tokens?.ids ?? null,
        token_logprobs: t.tokens?.logprobs ?? null,
        weights_version: t.tokens?.weightsVersion ?? null,
      })),
  };
  return COLUMNS.map(({ name }) => ({ name, data: batch.map(pick[name]!) }));
}

export function parquetSink(out: Writable, kvMetadata: Record<string, string> = {}): RecordSink<ExportRecord> {
  return parquetRowSink(out, COLUMNS, columnsOf, kvMetadata);
}
