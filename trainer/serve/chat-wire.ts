// The chat-completions wire format of the OpenAI-compatible server (server.ts): the request body validated (zod,
// first problem named, OpenAI's 400 shape), turned into chat messages, and the pieces of a reply (logprobs with
// their UTF-8 bytes, finish reason, usage, error body). Nothing here knows of models or of HTTP routes.
import { z } from 'zod';
import type { ChatMessage } from '../../tasks/agent.ts';
import type { EngineResult, EngineToken } from './engine-contract.ts';

const text = z.string();
const contentPart = z.object({ type: z.literal('text'), text });
const message = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant'], {
    message: 'role must be system, developer, user or assistant (tools are not supported)',
  }),
  content: z.union([text, z.array(contentPart), z.null()], {
    message: 'content must be a string or an array of text parts',
  }),
  name: z.string().optional(),
});

const chatRequestSchema = z.object({
  model: z.string({ message: 'model is required' }).min(1, 'model is required'),
  messages: z.array(message, { message: 'messages must be an array' }).min(1, 'messages must not be empty'),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
  max_tokens: z.number().int().min(1).nullish(),
  max_completion_tokens: z.number().int().min(1).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  seed: z.number().int().nullish(),
  stop: z.union([z.string().min(1), z.array(z.string().min(1)).max(4)]).nullish(),
  n: z.number().int().nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  /** vLLM's: each logprob's token as "token_id:<id>" (exact ids for a trainer; tasks/chat-logprobs.ts tokenIdsOf). */
  return_tokens_as_token_ids: z.boolean().nullish(),
  tools: z.array(z.unknown()).nullish(),
});

export type ChatRequest = z.infer<typeof chatRequestSchema>;

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

export function invalid(message: string, param: string | null = null, code: string | null = null): HttpError {
  return new HttpError(400, message, 'invalid_request_error', param, code);
}

/** The body as a ChatRequest, or an HttpError 400 naming the first problem. */
export function parseChatRequest(body: unknown): ChatRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw invalid('the request body must be a JSON object');
  const r = chatRequestSchema.safeParse(body);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const param = issue.path.map(String).join('.') || null;
    throw invalid(param ? `${param}: ${issue.message}` : issue.message, param);
  }
  const req = r.data;
  if (req.n != null && req.n !== 1)
    throw invalid(`n must be 1: this server returns one choice per request (got ${req.n})`, 'n');
  if (req.tools && req.tools.length) throw invalid('tools are not supported by this server', 'tools');
  if (req.top_logprobs && !req.logprobs) throw invalid('top_logprobs needs logprobs: true', 'top_logprobs');
  return req;
}

export function toMessages(req: ChatRequest): ChatMessage[] {
  return req.messages.map((m) => ({
    role: m.role === 'developer' ? 'system' : m.role,
    content:
      m.content === null ? '' : typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join(''),
  }));
}

// ---------------------------------------------------------------------------------------------------------
// Wire format

interface LogprobEntry {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

function bytesOf(s: string): number[] {
  return [...Buffer.from(s, 'utf8')];
}

/** One token's logprobs entry; with `asIds` (return_tokens_as_token_ids) its token is "token_id:<id>", as vLLM writes it. */
export function logprobEntry(t: EngineToken, asIds = false): LogprobEntry {
  return {
    token: asIds && t.id !== undefined ? `token_id:${t.id}` : t.text,
    logprob: t.logprob ?? 0,
    bytes: bytesOf(t.text),
    top_logprobs: (t.top ?? []).map((a) => ({ token: a.token, logprob: a.logprob, bytes: bytesOf(a.token) })),
  };
}

export function finishReason(r: EngineResult): 'stop' | 'length' {
  return r.finishReason === 'length' ? 'length' : 'stop';
}

export function usage(r: EngineResult) {
  return {
    prompt_tokens: r.promptTokens,
    completion_tokens: r.completionTokens,
    total_tokens: r.promptTokens + r.completionTokens,
  };
}

export function errorBody(e: HttpError) {
  return { error: { message: e.message, type: e.type, param: e.param, code: e.code } };
}

// ---------------------------------------------------------------------------------------------------------
// Metrics
