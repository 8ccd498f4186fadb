// The one exported shape of a session (our "full record"): what the jsonl and parquet writers serialise and what
// the sweet-rl writer derives its trajectories from. Built from a database row, it contains no Discord ids, no
// display names and no Discord guild/channel/thread ids: participants and raters appear only as pseudonyms.
import type { ChatMessage } from '../../tasks/agent.ts';
import type { FullSession } from './query.ts';

export interface ExportTurn {
  index: number;
  role: 'agent' | 'human' | 'system';
  content: string;
  /** The model's untouched output (agent turns), when it differs from what the human saw. */
  rawOutput: string | null;
  promptTokens: number | null;
  completionTokens: number | null;
  latencyMs: number | null;
  createdAt: string;
  /** Milliseconds since the session started. */
  offsetMs: number;
  /** Agent turns: the exact messages the model was sent (stored provenance); null for turns stored without it. */
  prompt: ChatMessage[] | null;
  /** Agent turns of a version that records them: the completion's token ids, log-probabilities and weights version. */
  tokens: { ids: number[]; logprobs: number[]; weightsVersion: string } | null;
  /**
   * Agent turns: 'recorded' (tokens above), 'off' (the version does not record tokens), 'unavailable' (asked for, the
   * server gave no ids); null for human and system turns and for turns stored before tokens were recorded.
   */
  tokenRecording: 'recorded' | 'off' | 'unavailable' | null;
}

export interface ExportRating {
  rater: string;
  value: number;
  /** Omitted (null) when comments are excluded. */
  comment: string | null;
  createdAt: string;
}

export interface ExportRecord {
  session: {
    id: string;
    channel: string;
    simulated: boolean;
    status: string;
    startedAt: string;
    endedAt: string | null;
    endReason: string | null;
    durationMs: number | null;
    turnCount: number;
    answer: string | null;
    reward: number | null;
    /**
     * The version of its study's consent text the person had accepted when the session started (Study
     * consentVersion; the card names the study's current one); null where the study had no text of its own.
     */
    consentVersion: number | null;
  };
  task: {
    id: string;
    kind: 'backend' | 'frontend';
    source: string;
    externalId: string | null;
    split: 'train' | 'test';
    problemDescription: string;
    groundTruth: string;
    testCases: string[] | null;
  };
  participant: { pseudonym: string; role: string };
  policyVersion: { id: string; name: string; algorithm: string; status: string } | null;
  turns: ExportTurn[];
  evaluation: {
    score: number;
    success: boolean;
    testsPassed: number | null;
    testsTotal: number | null;
    metric: string | null;
    evaluatorVersion: string;
    detail: unknown;
  } | null;
  ratings: ExportRating[];
  ratingMean: number | null;
  /** Moderation flags; their free-text reasons count as comments. */
  flags: { reason: string | null; createdAt: string; resolvedAt: string | null }[];
}

export interface RecordOptions {
  pseudonym: (discordUserId: string) => string;
  excludeComments: boolean;
}

/** Test cases are stored as an array of call expressions; anything else is a data error worth surfacing. */
export function testCasesOf(json: unknown, taskId = '?'): string[] | null {
  if (json === null || json === undefined) return null;
  if (Array.isArray(json) && json.every((x) => typeof x === 'string')) return json;
  // ColBench's own layout ({"test1": "...", ...}) is accepted too, in its key order.
  if (typeof json === 'object' && Object.values(json as object).every((x) => typeof x === 'string'))
    return Object.values(json as Record<string, string>);
  throw new Error(
    `task ${taskId}: testCases is neither an array of strings nor an object of strings; fix the task before exporting`,
  );
}

const ROLES = new Set(['system', 'user', 'assistant']);

/** The prompt recorded in a turn's provenance, when it is there and well formed. */
export function promptOf(provenance: unknown): ChatMessage[] | null {
  const prompt = (provenance as { prompt?: unknown } | null)?.prompt;
  if (!Array.isArray(prompt) || prompt.length === 0) return null;
  const ok = prompt.every(
    (m) =>
      m &&
      typeof m === 'object' &&
      ROLES.has((m as ChatMessage).role) &&
      typeof (m as ChatMessage).content === 'string',
  );
  return ok ? prompt.map((m: ChatMessage) => ({ role: m.role, content: m.content })) : null;
}

/** What a turn's provenance says of its tokens (tasks/agent.ts TurnProvenance.tokens). */
function tokenRecordingOf(provenance: unknown, stored: boolean): ExportTurn['tokenRecording'] {
  if (stored) return 'recorded';
  const said = (provenance as { tokens?: unknown } | null)?.tokens;
  return said === 'off' || said === 'unavailable' ? said : null;
}

export function toRecord(s: FullSession, opts: RecordOptions): ExportRecord {
  const start = s.startedAt.getTime();
  const ratings = s.ratings.map((r) => ({
    rater: opts.pseudonym(r.rater.discordUserId),
    value: r.value,
    comment: opts.excludeComments ? null : r.comment,
    createdAt: r.createdAt.toISOString(),
  }));
  return {
    session: {
      id: s.id,
      channel: s.channel,
      simulated: s.simulated,
      status: s.status,
      startedAt: s.startedAt.toISOString(),
      endedAt: s.endedAt?.toISOString() ?? null,
      endReason: s.endReason,
      durationMs: s.endedAt ? s.endedAt.getTime() - start : null,
      turnCount: s.turnCount,
      answer: s.answer,
      reward: s.reward,
      consentVersion: s.consentVersion,
    },
    task: {
      id: s.task.id,
      kind: s.task.kind,
      source: s.task.source,
      externalId: s.task.externalId,
      split: s.task.split,
      problemDescription: s.task.description,
      groundTruth: s.task.hiddenReference,
      testCases: testCasesOf(s.task.testCases, s.task.id),
    },
    participant: { pseudonym: opts.pseudonym(s.participant.discordUserId), role: s.participant.role },
    policyVersion: s.policyVersion ? { ...s.policyVersion } : null,
    turns: s.turns.map((t) => ({
      index: t.index,
      role: t.role,
      content: t.content,
      rawOutput: t.rawOutput !== null && t.rawOutput !== t.content ? t.rawOutput : null,
      promptTokens: t.promptTokens,
      completionTokens: t.completionTokens,
      latencyMs: t.latencyMs,
      createdAt: t.createdAt.toISOString(),
      offsetMs: t.createdAt.getTime() - start,
      prompt: t.role === 'agent' ? promptOf(t.provenance) : null,
      tokens: t.tokens
        ? { ids: t.tokens.ids, logprobs: t.tokens.logprobs, weightsVersion: t.tokens.weightsVersion }
        : null,
      tokenRecording: t.role === 'agent' ? tokenRecordingOf(t.provenance, t.tokens !== null) : null,
    })),
    evaluation: s.evaluation
      ? {
          score: s.evaluation.score,
          success: s.evaluation.success,
          testsPassed: s.evaluation.testsPassed,
          testsTotal: s.evaluation.testsTotal,
          metric: s.evaluation.metric,
          evaluatorVersion: s.evaluation.evaluatorVersion,
          detail: s.evaluation.detail,
        }
      : null,
    ratings,
    ratingMean: ratings.length ? ratings.reduce((a, r) => a + r.value, 0) / ratings.length : null,
    flags: s.flags.map((f) => ({
      reason: opts.excludeComments ? null : f.reason,
      createdAt: f.createdAt.toISOString(),
      resolvedAt: f.resolvedAt?.toISOString() ?? null,
    })),
  };
}
