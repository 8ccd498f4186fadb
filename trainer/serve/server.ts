// The OpenAI-compatible HTTP server of `sweetloop serve`: chat completions (JSON and SSE streaming, logprobs,
// seed, stop), /v1/models, /health and Prometheus /metrics, over whatever ServingEngine the EngineSlot holds now.
// It knows nothing of models: validation, the wire format, errors in OpenAI's shape (never a stack trace),
// 429 + Retry-After when the engine's queue is full, and cancelling a request whose client went away.
// Imports: fastify, prom-client, zod, pino's types, and trainer/serve's engine contract and slot.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../../tasks/logger.ts';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { z } from 'zod';
import type { ChatMessage } from '../../tasks/agent.ts';
import { EngineOverloadedError, EngineRequestError } from './engine-contract.ts';
import type { EngineRequest, EngineResult, EngineToken, ServingEngine } from './engine-contract.ts';
import { EngineSlot } from './slot.ts';

export interface ServerOptions {
  /** The engine to serve, or a slot whose engine a deploy follower swaps. */
  engine: ServingEngine | EngineSlot;
  /** Default 0: a free port (read it from the returned url). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  log?: Logger;
  /** Completion budget when a request gives neither max_tokens nor max_completion_tokens (default 1024). */
  defaultMaxTokens?: number;
  /** Sent as Retry-After with a 429 (default 1 s). */
  retryAfterSeconds?: number;
}

export interface RunningServer {
  /** http://host:port, without a trailing slash; OpenAI clients use `${url}/v1`. */
  url: string;
  port: number;
  slot: EngineSlot;
  /** Prometheus registry behind /metrics (one per server). */
  registry: Registry;
  /** Stops listening, waits for running requests, then closes the engine. */
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------
// Request validation

const text = z.string();
const contentPart = z.object({ type: z.literal('text'), text });
const message = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant'], { message: 'role must be system, developer, user or assistant (tools are not supported)' }),
  content: z.union([text, z.array(contentPart), z.null()], { message: 'content must be a string or an array of text parts' }),
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
  tools: z.array(z.unknown()).nullish(),
});

export type ChatRequest = z.infer<typeof chatRequestSchema>;

class HttpError extends Error {
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

function invalid(message: string, param: string | null = null, code: string | null = null): HttpError {
  return new HttpError(400, message, 'invalid_request_error', param, code);
}

/** The body as a ChatRequest, or an HttpError 400 naming the first problem. */
export function parseChatRequest(body: unknown): ChatRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalid('the request body must be a JSON object');
  const r = chatRequestSchema.safeParse(body);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const param = issue.path.map(String).join('.') || null;
    throw invalid(param ? `${param}: ${issue.message}` : issue.message, param);
  }
  const req = r.data;
  if (req.n != null && req.n !== 1) throw invalid(`n must be 1: this server returns one choice per request (got ${req.n})`, 'n');
  if (req.tools && req.tools.length) throw invalid('tools are not supported by this server', 'tools');
  if (req.top_logprobs && !req.logprobs) throw invalid('top_logprobs needs logprobs: true', 'top_logprobs');
  return req;
}

function toMessages(req: ChatRequest): ChatMessage[] {
  return req.messages.map((m) => ({
    role: m.role === 'developer' ? 'system' : m.role,
    content: m.content === null ? '' : typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join(''),
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

function logprobEntry(t: EngineToken): LogprobEntry {
  return {
    token: t.text,
    logprob: t.logprob ?? 0,
    bytes: bytesOf(t.text),
    top_logprobs: (t.top ?? []).map((a) => ({ token: a.token, logprob: a.logprob, bytes: bytesOf(a.token) })),
  };
}

function finishReason(r: EngineResult): 'stop' | 'length' {
  return r.finishReason === 'length' ? 'length' : 'stop';
}

function usage(r: EngineResult) {
  return { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens };
}

function errorBody(e: HttpError) {
  return { error: { message: e.message, type: e.type, param: e.param, code: e.code } };
}

// ---------------------------------------------------------------------------------------------------------
// Metrics

function createMetrics(slot: EngineSlot) {
  const registry = new Registry();
  const stat = <K extends 'running' | 'queued' | 'maxBatch' | 'maxQueue'>(k: K) =>
    function (this: Gauge) {
      this.set(slot.engine?.stats()[k] ?? 0);
    };
  new Gauge({ name: 'sweetloop_serve_queue_depth', help: 'Requests waiting for a decoding slot', registers: [registry], collect: stat('queued') });
  new Gauge({ name: 'sweetloop_serve_running_sequences', help: 'Sequences decoding now (the running batch)', registers: [registry], collect: stat('running') });
  new Gauge({ name: 'sweetloop_serve_max_batch', help: 'Most sequences the engine decodes at once', registers: [registry], collect: stat('maxBatch') });
  new Gauge({ name: 'sweetloop_serve_max_queue', help: 'Most requests waiting before 429', registers: [registry], collect: stat('maxQueue') });
  // The engine's own cumulative counts, turned into counters by adding what grew since the last scrape.
  const seen = new WeakMap<ServingEngine, { steps: number; seqs: number }>();
  const steps = new Counter({ name: 'sweetloop_serve_decode_steps_total', help: 'Decoding steps run by the engine (one forward pass over the running batch)', registers: [registry] });
  const stepSeqs = new Counter({
    name: 'sweetloop_serve_step_sequences_total',
    help: 'Sum over decoding steps of the sequences in each; divided by decode_steps it is the mean batch size',
    registers: [registry],
  });
  const syncEngineCounters = () => {
    const engine = slot.engine;
    if (!engine) return;
    const s = engine.stats();
    if (s.decodeSteps === undefined || s.stepSequences === undefined) return;
    const last = seen.get(engine) ?? { steps: 0, seqs: 0 };
    if (s.decodeSteps > last.steps) steps.inc(s.decodeSteps - last.steps);
    if (s.stepSequences > last.seqs) stepSeqs.inc(s.stepSequences - last.seqs);
    seen.set(engine, { steps: s.decodeSteps, seqs: s.stepSequences });
  };
  return {
    registry,
    syncEngineCounters,
    requests: new Counter({ name: 'sweetloop_serve_requests_total', help: 'Chat completion requests by HTTP status', labelNames: ['status'], registers: [registry] }),
    overloaded: new Counter({ name: 'sweetloop_serve_rejected_overloaded_total', help: 'Requests refused with 429 because the queue was full', registers: [registry] }),
    aborted: new Counter({ name: 'sweetloop_serve_aborted_total', help: 'Requests whose client went away before the end', registers: [registry] }),
    promptTokens: new Counter({ name: 'sweetloop_serve_prompt_tokens_total', help: 'Prompt tokens of completed requests', registers: [registry] }),
    tokens: new Counter({ name: 'sweetloop_serve_generated_tokens_total', help: 'Tokens generated (rate() of it is tokens/s)', registers: [registry] }),
    ttft: new Histogram({
      name: 'sweetloop_serve_time_to_first_token_seconds',
      help: 'From the request arriving to its first token leaving the engine',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'sweetloop_serve_request_duration_seconds',
      help: 'From the request arriving to its last byte (completed requests)',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers: [registry],
    }),
  };
}

// ---------------------------------------------------------------------------------------------------------
// The server

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const slot = options.engine instanceof EngineSlot ? options.engine : new EngineSlot(options.engine);
  const log = options.log;
  const defaultMaxTokens = options.defaultMaxTokens ?? 1024;
  const retryAfter = options.retryAfterSeconds ?? 1;
  const metrics = createMetrics(slot);
  // Prompts carry whole dialogues (frontend pages included): well above fastify's 1 MiB default.
  // close() first lets running requests finish (slot.close), then drops whatever connections remain: kept-alive
  // client sockets would otherwise hold it open until their keep-alive timeout.
  const app: FastifyInstance = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024, forceCloseConnections: true });

  const send = (reply: FastifyReply, e: HttpError) => {
    if (e.status === 429) reply.header('retry-after', String(retryAfter));
    metrics.requests.inc({ status: String(e.status) });
    return reply.code(e.status).send(errorBody(e));
  };

  app.setErrorHandler((err: Error & { statusCode?: number }, request, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status === 500) log?.error({ err: err.message, url: request.url }, 'serve: request failed');
    // Fastify's own 4xx errors (bad JSON, body too large, wrong content type) carry messages meant for clients.
    return send(reply, new HttpError(status, status === 500 ? 'internal server error' : err.message, status === 500 ? 'server_error' : 'invalid_request_error'));
  });
  app.setNotFoundHandler((request, reply) =>
    send(reply, new HttpError(404, `no route ${request.method} ${request.url.split('?')[0]}`, 'invalid_request_error', null, 'not_found')),
  );

  const modelList = (engine: ServingEngine) =>
    [engine.modelName, ...engine.adapters()].map((id) => ({ id, object: 'model' as const, created: 0, owned_by: 'sweetloop' }));

  app.get('/health', async (_request, reply) => {
    const engine = slot.engine;
    if (!engine) return reply.code(503).send({ status: 'loading' });
    return { status: 'ok', model: engine.modelName, adapters: engine.adapters(), ...engine.stats() };
  });

  app.get('/metrics', async (_request, reply) => {
    metrics.syncEngineCounters();
    return reply.header('content-type', metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  app.get('/v1/models', async (_request, reply) => {
    const engine = slot.engine;
    if (!engine) return send(reply, new HttpError(503, 'no model is loaded yet', 'server_error', null, 'model_loading'));
    return { object: 'list', data: modelList(engine) };
  });

  app.get<{ Params: { model: string } }>('/v1/models/:model', async (request, reply) => {
    const engine = slot.engine;
    if (!engine) return send(reply, new HttpError(503, 'no model is loaded yet', 'server_error', null, 'model_loading'));
    const m = modelList(engine).find((x) => x.id === request.params.model);
    if (!m) return send(reply, new HttpError(404, `The model \`${request.params.model}\` does not exist`, 'invalid_request_error', 'model', 'model_not_found'));
    return m;
  });

  app.post('/v1/chat/completions', (request, reply) => chatCompletion(request, reply));

  async function chatCompletion(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const started = performance.now();
    let body: ChatRequest;
    try {
      body = parseChatRequest(request.body);
    } catch (e) {
      if (e instanceof HttpError) return send(reply, e);
      throw e;
    }
    const lease = slot.acquire();
    if (!lease) return send(reply, new HttpError(503, 'no model is loaded yet; try again shortly', 'server_error', null, 'model_loading'));
    const engine = lease.engine;
    let releaseOnReturn = true;
    try {
      let adapter: string | null;
      if (body.model === engine.modelName) adapter = null;
      else if (engine.adapters().includes(body.model)) adapter = body.model;
      else return send(reply, new HttpError(404, `The model \`${body.model}\` does not exist (served: ${modelList(engine).map((m) => m.id).join(', ')})`, 'invalid_request_error', 'model', 'model_not_found'));

      // A client that goes away before the response ends cancels the request: the engine frees its slot.
      const abort = new AbortController();
      reply.raw.on('close', () => {
        if (!reply.raw.writableFinished) abort.abort();
      });
      const engineReq: EngineRequest = {
        messages: toMessages(body),
        maxTokens: body.max_completion_tokens ?? body.max_tokens ?? defaultMaxTokens,
        temperature: body.temperature ?? 1,
        topP: body.top_p ?? 1,
        ...(body.seed != null ? { seed: body.seed } : {}),
        ...(body.stop != null ? { stop: typeof body.stop === 'string' ? [body.stop] : body.stop } : {}),
        logprobs: body.logprobs === true,
        topLogprobs: body.logprobs ? (body.top_logprobs ?? 0) : 0,
        adapter,
        signal: abort.signal,
      };
      let stream;
      try {
        stream = engine.generate(engineReq);
      } catch (e) {
        if (e instanceof EngineOverloadedError) {
          metrics.overloaded.inc();
          return send(reply, new HttpError(429, `the server is busy: ${e.message}; retry after ${retryAfter} s`, 'requests', null, 'rate_limit_exceeded'));
        }
        if (e instanceof EngineRequestError) return send(reply, invalid(e.message));
        throw e;
      }

      const id = `chatcmpl-${randomUUID().replace(/-/g, '')}`;
      const created = Math.floor(Date.now() / 1000);
      const it = stream[Symbol.asyncIterator]();
      // The first event decides the status: an engine error before any token is still a proper HTTP error.
      let first: IteratorResult<EngineToken>;
      try {
        first = await it.next();
      } catch (e) {
        return send(reply, engineFailure(e));
      }
      if (!first.done) metrics.ttft.observe((performance.now() - started) / 1000);
      if (abort.signal.aborted) return gone(reply, stream.result);

      if (!body.stream) {
        const tokens: EngineToken[] = [];
        let next = first;
        try {
          while (!next.done) {
            tokens.push(next.value);
            metrics.tokens.inc();
            next = await it.next();
          }
        } catch (e) {
          return send(reply, engineFailure(e));
        }
        const result = await stream.result;
        countRest(result, tokens.length);
        if (abort.signal.aborted) return gone(reply, stream.result);
        if (result.finishReason === 'abort') return send(reply, cancelledByServer());
        metrics.promptTokens.inc(result.promptTokens);
        metrics.requests.inc({ status: '200' });
        metrics.latency.observe((performance.now() - started) / 1000);
        return reply.send({
          id,
          object: 'chat.completion',
          created,
          model: body.model,
          system_fingerprint: null,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: tokens.map((t) => t.text).join(''), refusal: null },
              logprobs: engineReq.logprobs ? { content: tokens.map(logprobEntry), refusal: null } : null,
              finish_reason: finishReason(result),
            },
          ],
          usage: usage(result),
        });
      }

      // Streaming: server-sent events, one chunk a token, then the finish reason, the usage if asked, [DONE].
      releaseOnReturn = false;
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
      const includeUsage = body.stream_options?.include_usage === true;
      const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => {
        if (res.writableEnded || res.destroyed) return;
        const payload = { id, object: 'chat.completion.chunk', created, model: body.model, system_fingerprint: null, choices, ...(includeUsage ? { usage: null } : {}), ...extra };
        res.write(`data: ${JSON.stringify(payload)}\n\n`);
      };
      void (async () => {
        try {
          chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
          let next = first;
          let streamed = 0;
          while (!next.done) {
            const t = next.value;
            metrics.tokens.inc();
            streamed++;
            chunk([{ index: 0, delta: { content: t.text }, logprobs: engineReq.logprobs ? { content: [logprobEntry(t)], refusal: null } : null, finish_reason: null }]);
            next = await it.next();
          }
          const result = await stream.result;
          countRest(result, streamed);
          if (abort.signal.aborted) {
            metrics.aborted.inc();
            res.destroy();
            return;
          }
          if (result.finishReason === 'abort') throw cancelledByServer();
          chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finishReason(result) }]);
          if (includeUsage) chunk([], { usage: usage(result) });
          res.end('data: [DONE]\n\n');
          metrics.promptTokens.inc(result.promptTokens);
          metrics.requests.inc({ status: '200' });
          metrics.latency.observe((performance.now() - started) / 1000);
        } catch (e) {
          // Headers are gone: the error travels as an event, as OpenAI's streams do.
          const err = engineFailure(e);
          metrics.requests.inc({ status: String(err.status) });
          if (!res.writableEnded && !res.destroyed) {
            res.write(`data: ${JSON.stringify(errorBody(err))}\n\n`);
            res.end();
          }
        } finally {
          lease.release();
        }
      })();
      return reply;
    } finally {
      if (releaseOnReturn) lease.release();
    }
  }

  /** The client went away: nothing to answer; the engine has already been told through the abort signal. */
  async function gone(reply: FastifyReply, result: Promise<EngineResult>): Promise<FastifyReply> {
    metrics.aborted.inc();
    await result.catch(() => {});
    reply.hijack();
    reply.raw.destroy();
    return reply;
  }

  /** Tokens the engine generated but did not hand over as text (the EOS token, the end of a stop string). */
  function countRest(result: EngineResult, handedOver: number): void {
    if (result.completionTokens > handedOver) metrics.tokens.inc(result.completionTokens - handedOver);
  }

  function cancelledByServer(): HttpError {
    return new HttpError(503, 'the request was cancelled because the model is being unloaded; try again', 'server_error', null, 'model_unloading');
  }

  function engineFailure(e: unknown): HttpError {
    if (e instanceof HttpError) return e;
    if (e instanceof EngineRequestError) return invalid(e.message);
    if (e instanceof EngineOverloadedError) return new HttpError(429, `the server is busy: ${e.message}`, 'requests', null, 'rate_limit_exceeded');
    log?.error({ err: e instanceof Error ? e.message : String(e) }, 'serve: generation failed');
    // The engine's message, never its stack: it names what failed (a crashed worker, a closed engine).
    const msg = e instanceof Error ? e.message.split('\n')[0]! : String(e);
    return new HttpError(500, `generation failed: ${msg}`, 'server_error');
  }

  await app.listen({ port: options.port ?? 0, host: options.host ?? '127.0.0.1' });
  const addr = app.server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `http://${host}:${addr.port}`;
  log?.info({ url, model: slot.engine?.modelName ?? null }, 'serve: listening');
  let closing: Promise<void> | undefined;
  return {
    url,
    port: addr.port,
    slot,
    registry: metrics.registry,
    close: () =>
      (closing ??= (async () => {
        // New requests get 503 from here on; running ones finish, then the engine closes, then the sockets.
        await slot.close();
        await app.close();
      })()),
  };
}
