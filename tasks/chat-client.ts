// The one client for OpenAI-compatible chat-completions servers (vLLM, SGLang, llama.cpp's server, TGI, Ollama,
// hosted APIs, `sweetloop serve`): the endpoint policies, the LLM collaborator simulator and the adapter calls all
// go through here, so timeouts, retries, the in-flight cap and the handling of keys have one meaning.
//
// Built on the official `openai` package, which already does the protocol (SSE parsing, error classes) and the
// retries of a request that failed before its body was read: connection refused or reset, 408/409/429/5xx, with
// exponential backoff (0.5 s doubling to 8 s, up to 25% jitter) honouring Retry-After / retry-after-ms up to 60 s.
// What it cannot do, this file adds:
// - a stream that breaks after it started (connection dropped mid-reply, no first token in time, no end) is
//   re-sent from scratch with the same backoff; every HTTP attempt, the SDK's and ours, counts against one budget
//   (`maxRetries` + 1 attempts);
// - a timeout for the first token and one for the whole reply (retries included);
// - a cap on requests in flight per endpoint (base URL), shared by the whole process;
// - errors that say which endpoint failed and how, split into "unavailable, try again later"
//   (EndpointUnavailableError, an AgentUnavailableError) and "this request is wrong" (EndpointRequestError).
// The endpoint (URL, key, SDK client, in-flight cap) and the error classes are chat-endpoint.ts.
import { scrubSecret } from './secret-text.ts';
import type OpenAI from 'openai';
import { APIConnectionError, APIError, APIUserAbortError } from 'openai';
import type { Logger } from './logger.ts';
import type { ChatMessage, TokenLogprob } from './agent.ts';
import {
  attemptScope,
  detailOf,
  displayUrl,
  endpointBaseUrl,
  endpointLimiter,
  EndpointRequestError,
  EndpointUnavailableError,
  isRetryableStatus,
  resolveKey,
  retryAfterOf,
  sdkClient,
  type ChatEndpoint,
} from './chat-endpoint.ts';
import { toLogprobs } from './chat-logprobs.ts';

export interface ChatClientOptions {
  /** Most time from sending a streamed request to its first token, per attempt (default 60 s). */
  firstTokenTimeoutMs?: number;
  /** Most time for the whole reply, retries and waits included (default 5 min). */
  totalTimeoutMs?: number;
  /** Extra HTTP attempts after a failure worth retrying (default 3). */
  maxRetries?: number;
  /** Requests in flight at once to this endpoint, process-wide (default 16; the smallest cap asked for wins). */
  maxInFlight?: number;
  /** Base of our own backoff for broken streams (default 500 ms, the SDK's own base). */
  backoffMs?: number;
  log?: Logger | undefined;
}

/** Message content: text, or parts with images for a vision model (the simulator's screenshots). */
export type ContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };
export type WireMessage = { role: ChatMessage['role']; content: string | ContentPart[] };

export interface ChatRequest {
  model: string;
  messages: readonly WireMessage[];
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  seed?: number | null;
  stop?: string[];
  /** Ask for per-token log-probabilities (vLLM and llama.cpp return them; others may ignore the field). */
  logprobs?: boolean;
  /**
   * With `logprobs`: ask for token ids (vLLM's `return_tokens_as_token_ids`: each logprob's token is then
   * "token_id:<id>"; Sweetloop's own server does the same). Read them with tokenIdsOf.
   */
  tokenIds?: boolean;
  /** With `logprobs`: how many alternatives per token. */
  topLogprobs?: number;
  /** Default true. Without streaming there is no first-token time and no first-token timeout. */
  stream?: boolean;
  signal?: AbortSignal | undefined;
}

export interface ChatResult {
  text: string;
  /** 'stop', 'length', ... as the server said; null when it did not say. */
  finishReason: string | null;
  usage: { promptTokens: number; completionTokens: number } | null;
  /** Per generated token, when asked for and returned. */
  logprobs: TokenLogprob[] | null;
  /** From sending the attempt that succeeded to its first token (streamed requests only; the SDK's own retries of that attempt included). */
  firstTokenMs: number | null;
  /** From the call to the end of the reply, waits and retries included. */
  latencyMs: number;
  /** The model name the server reported (an adapter's name when one served the request). */
  servedModel: string;
  /** HTTP attempts made (1 when nothing had to be retried). */
  attempts: number;
}

// ---------------------------------------------------------------------------------------------------------
// Calls

/** Backoff before retry n (0-based), shaped like the SDK's: base * 2^n up to 8 s, minus up to 25% jitter. */
export function backoffDelayMs(n: number, baseMs = 500): number {
  return Math.min(baseMs * 2 ** n, 8000) * (1 - Math.random() * 0.25);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** A streamed attempt that broke after the response started: worth re-sending. */
class BrokenStream extends Error {}

/**
 * Sends one chat-completions request and returns the whole reply. Throws EndpointUnavailableError when the
 * server stays unreachable, overloaded or too slow through the retries, EndpointRequestError when it refuses the
 * request, and the caller's abort reason when `request.signal` aborts.
 */
export async function chatCompletion(
  endpoint: ChatEndpoint,
  request: ChatRequest,
  options: ChatClientOptions = {},
): Promise<ChatResult> {
  const base = endpointBaseUrl(endpoint.url);
  const shown = displayUrl(base);
  const key = resolveKey(endpoint);
  const scrub = (s: string) => (key ? scrubSecret(s, key) : s);
  const client = sdkClient(base, key, options.log);
  const limiter = endpointLimiter(base, options.maxInFlight);
  const maxAttempts = Math.max(0, options.maxRetries ?? 3) + 1;
  const firstTokenMs = options.firstTokenTimeoutMs ?? 60_000;
  const totalMs = options.totalTimeoutMs ?? 300_000;
  const stream = request.stream ?? true;
  const started = performance.now();

  // One deadline for the whole call; the caller's signal ends it too.
  const deadline = new AbortController();
  const totalTimer = setTimeout(() => deadline.abort(new Error('total timeout')), totalMs);
  const callerAbort = () => deadline.abort(request.signal!.reason);
  request.signal?.addEventListener('abort', callerAbort, { once: true });
  const scope = { count: 0 };

  const body = {
    model: request.model,
    messages: request.messages as OpenAI.Chat.ChatCompletionMessageParam[],
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.topP !== undefined ? { top_p: request.topP } : {}),
    ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
    ...(request.seed !== undefined && request.seed !== null ? { seed: request.seed } : {}),
    ...(request.stop ? { stop: request.stop } : {}),
    ...(request.logprobs
      ? {
          logprobs: true,
          ...(request.topLogprobs ? { top_logprobs: request.topLogprobs } : {}),
          ...(request.tokenIds ? { return_tokens_as_token_ids: true } : {}),
        }
      : {}),
  };

  const unavailable = (why: string, status?: number, retryAfterMs?: number) =>
    new EndpointUnavailableError(
      scrub(`chat endpoint ${shown} ${why} (gave up after ${scope.count} attempt${scope.count === 1 ? '' : 's'})`),
      shown,
      status,
      scope.count,
      retryAfterMs,
    );

  async function attempt(): Promise<Omit<ChatResult, 'latencyMs' | 'attempts'>> {
    const retriesLeft = Math.max(0, maxAttempts - scope.count - 1);
    const sent = performance.now();
    if (!stream) {
      const r = await client.chat.completions.create(
        { ...body, stream: false },
        { signal: deadline.signal, maxRetries: retriesLeft, timeout: totalMs },
      );
      const choice = (r as Partial<OpenAI.Chat.ChatCompletion>).choices?.[0];
      if (!choice || typeof choice.message?.content !== 'string') {
        throw new EndpointRequestError(
          scrub(`chat endpoint ${shown} returned no choices[0].message.content: ${JSON.stringify(r).slice(0, 200)}`),
          shown,
          200,
        );
      }
      return {
        text: choice.message.content,
        finishReason: choice.finish_reason ?? null,
        usage: r.usage ? { promptTokens: r.usage.prompt_tokens, completionTokens: r.usage.completion_tokens } : null,
        logprobs: choice.logprobs?.content ? toLogprobs(choice.logprobs.content) : null,
        firstTokenMs: null,
        servedModel: r.model ?? request.model,
      };
    }

    // Per attempt: the first-token timer aborts this attempt only; the deadline aborts all of them.
    const attemptAbort = new AbortController();
    const onDeadline = () => attemptAbort.abort(deadline.signal.reason);
    deadline.signal.addEventListener('abort', onDeadline, { once: true });
    let firstAt: number | null = null;
    const firstTimer = setTimeout(() => attemptAbort.abort(new Error('first token timeout')), firstTokenMs);
    try {
      const chunks = await client.chat.completions.create(
        { ...body, stream: true, stream_options: { include_usage: true } },
        { signal: attemptAbort.signal, maxRetries: retriesLeft, timeout: totalMs },
      );
      let text = '';
      let finishReason: string | null = null;
      let usage: ChatResult['usage'] = null;
      let servedModel = request.model;
      const logprobs: TokenLogprob[] = [];
      let sawLogprobs = false;
      try {
        for await (const chunk of chunks) {
          if (chunk.model) servedModel = chunk.model;
          if (chunk.usage)
            usage = { promptTokens: chunk.usage.prompt_tokens, completionTokens: chunk.usage.completion_tokens };
          const choice = chunk.choices?.[0];
          if (!choice) continue;
          if (choice.delta?.content) {
            if (firstAt === null) {
              firstAt = performance.now();
              clearTimeout(firstTimer);
            }
            text += choice.delta.content;
          }
          if (choice.logprobs?.content) {
            sawLogprobs = true;
            logprobs.push(...toLogprobs(choice.logprobs.content));
          }
          if (choice.finish_reason) finishReason = choice.finish_reason;
        }
      } catch (err) {
        if (attemptAbort.signal.aborted) throw err;
        // The body broke after the headers came: the SDK hands such errors over without retrying them.
        throw new BrokenStream(`the reply stream broke: ${(err as Error).message}`);
      }
      if (finishReason === null) throw new BrokenStream('the reply stream ended without a finish reason');
      return {
        text,
        finishReason,
        usage,
        logprobs: sawLogprobs ? logprobs : null,
        firstTokenMs: firstAt === null ? null : firstAt - sent,
        servedModel,
      };
    } catch (err) {
      if (attemptAbort.signal.aborted && !deadline.signal.aborted) {
        throw new BrokenStream(`sent no token within ${firstTokenMs} ms`);
      }
      throw err;
    } finally {
      clearTimeout(firstTimer);
      deadline.signal.removeEventListener('abort', onDeadline);
    }
  }

  try {
    return await attemptScope.run(scope, async () => {
      for (let retry = 0; ; retry++) {
        try {
          const r = await limiter(attempt);
          return { ...r, latencyMs: performance.now() - started, attempts: scope.count };
        } catch (err) {
          if (request.signal?.aborted) throw request.signal.reason;
          if (deadline.signal.aborted) throw unavailable(`did not answer within ${totalMs} ms`);
          if (err instanceof BrokenStream) {
            if (scope.count < maxAttempts) {
              options.log?.warn(
                { endpoint: shown, attempt: scope.count, reason: err.message },
                'chat endpoint: retrying a broken reply',
              );
              await sleep(backoffDelayMs(retry, options.backoffMs), deadline.signal).catch(() => {});
              if (request.signal?.aborted) throw request.signal.reason;
              if (deadline.signal.aborted) throw unavailable(`did not answer within ${totalMs} ms`);
              continue;
            }
            throw unavailable(err.message);
          }
          if (err instanceof APIUserAbortError) throw unavailable(`did not answer within ${totalMs} ms`);
          if (err instanceof APIConnectionError) {
            // Includes APIConnectionTimeoutError; the SDK has used up the retries by now.
            throw unavailable(`is unreachable: ${(err.cause as Error | undefined)?.message ?? err.message}`);
          }
          if (err instanceof APIError && err.status !== undefined) {
            if (isRetryableStatus(err.status))
              throw unavailable(`answered HTTP ${err.status}: ${detailOf(err)}`, err.status, retryAfterOf(err.headers));
            throw new EndpointRequestError(
              scrub(`chat endpoint ${shown} refused the request: HTTP ${err.status}: ${detailOf(err)}`),
              shown,
              err.status,
            );
          }
          if (err instanceof SyntaxError) {
            throw new EndpointRequestError(
              scrub(`chat endpoint ${shown} returned something that is not JSON: ${err.message.slice(0, 200)}`),
              shown,
              undefined,
            );
          }
          if (err instanceof EndpointRequestError) throw err;
          throw new EndpointRequestError(
            scrub(`chat endpoint ${shown} failed: ${(err as Error).message}`),
            shown,
            undefined,
          );
        }
      }
    });
  } finally {
    clearTimeout(totalTimer);
    request.signal?.removeEventListener('abort', callerAbort);
  }
}

/**
 * A JSON request to another route of the same server (`/models`, vLLM's `/load_lora_adapter`), with the same
 * key, retries and error classes as chat requests. Returns the parsed JSON, or the text when it is not JSON.
 */
export async function endpointRequest(
  endpoint: ChatEndpoint,
  method: 'get' | 'post',
  path: string,
  body?: unknown,
  options: Pick<ChatClientOptions, 'maxRetries' | 'totalTimeoutMs' | 'log'> = {},
): Promise<unknown> {
  const base = endpointBaseUrl(endpoint.url);
  const shown = displayUrl(base);
  const key = resolveKey(endpoint);
  const scrub = (s: string) => (key ? scrubSecret(s, key) : s);
  const client = sdkClient(base, key, options.log);
  const reqOpts = { maxRetries: options.maxRetries ?? 2, timeout: options.totalTimeoutMs ?? 30_000 };
  try {
    return method === 'get' ? await client.get(path, reqOpts) : await client.post(path, { body, ...reqOpts });
  } catch (err) {
    if (err instanceof APIConnectionError) {
      throw new EndpointUnavailableError(
        scrub(`${shown}${path} is unreachable: ${(err.cause as Error | undefined)?.message ?? err.message}`),
        shown,
        undefined,
        0,
      );
    }
    if (err instanceof APIError && err.status !== undefined) {
      if (isRetryableStatus(err.status)) {
        throw new EndpointUnavailableError(
          scrub(`${shown}${path} answered HTTP ${err.status}: ${detailOf(err)}`),
          shown,
          err.status,
          0,
          retryAfterOf(err.headers),
        );
      }
      throw new EndpointRequestError(
        scrub(`${shown}${path} refused the request: HTTP ${err.status}: ${detailOf(err)}`),
        shown,
        err.status,
      );
    }
    throw new EndpointRequestError(scrub(`${shown}${path} failed: ${(err as Error).message}`), shown, undefined);
  }
}
