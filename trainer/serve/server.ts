// The OpenAI-compatible HTTP server of `sweetloop serve`: chat completions (JSON and SSE streaming, logprobs,
// seed, stop), /v1/models, /health and Prometheus /metrics, over whatever ServingEngine the EngineSlot holds now.
// It knows nothing of models: validation, the wire format, errors in OpenAI's shape (never a stack trace),
// 429 + Retry-After when the engine's queue is full, and cancelling a request whose client went away.
// The wire format is chat-wire.ts's, the metrics server-metrics.ts's.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../../tasks/logger.ts';
import type { Registry } from 'prom-client';
import { EngineOverloadedError, EngineRequestError } from './engine-contract.ts';
import type { EngineRequest, EngineResult, EngineToken, ServingEngine } from './engine-contract.ts';
import { EngineSlot } from './slot.ts';
import {
  errorBody,
  finishReason,
  HttpError,
  invalid,
  logprobEntry,
  parseChatRequest,
  toMessages,
  usage,
  type ChatRequest,
} from './chat-wire.ts';
import { createMetrics } from './server-metrics.ts';

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
    return send(
      reply,
      new HttpError(
        status,
        status === 500 ? 'internal server error' : err.message,
        status === 500 ? 'server_error' : 'invalid_request_error',
      ),
    );
  });
  app.setNotFoundHandler((request, reply) =>
    send(
      reply,
      new HttpError(
        404,
        `no route ${request.method} ${request.url.split('?')[0]}`,
        'invalid_request_error',
        null,
        'not_found',
      ),
    ),
  );

  const modelList = (engine: ServingEngine) =>
    [engine.modelName, ...engine.adapters()].map((id) => ({
      id,
      object: 'model' as const,
      created: 0,
      owned_by: 'sweetloop',
    }));

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
    if (!engine)
      return send(reply, new HttpError(503, 'no model is loaded yet', 'server_error', null, 'model_loading'));
    return { object: 'list', data: modelList(engine) };
  });

  app.get<{ Params: { model: string } }>('/v1/models/:model', async (request, reply) => {
    const engine = slot.engine;
    if (!engine)
      return send(reply, new HttpError(503, 'no model is loaded yet', 'server_error', null, 'model_loading'));
    const m = modelList(engine).find((x) => x.id === request.params.model);
    if (!m)
      return send(
        reply,
        new HttpError(
          404,
          `The model \`${request.params.model}\` does not exist`,
          'invalid_request_error',
          'model',
          'model_not_found',
        ),
      );
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
    if (!lease)
      return send(
        reply,
        new HttpError(503, 'no model is loaded yet; try again shortly', 'server_error', null, 'model_loading'),
      );
    const engine = lease.engine;
    let releaseOnReturn = true;
    try {
      let adapter: string | null;
      if (body.model === engine.modelName) adapter = null;
      else if (engine.adapters().includes(body.model)) adapter = body.model;
      else
        return send(
          reply,
          new HttpError(
            404,
            `The model \`${body.model}\` does not exist (served: ${modelList(engine)
              .map((m) => m.id)
              .join(', ')})`,
            'invalid_request_error',
            'model',
            'model_not_found',
          ),
        );

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
      const asIds = body.return_tokens_as_token_ids === true;
      let stream;
      try {
        stream = engine.generate(engineReq);
      } catch (e) {
        if (e instanceof EngineOverloadedError) {
          metrics.overloaded.inc();
          return send(
            reply,
            new HttpError(
              429,
              `the server is busy: ${e.message}; retry after ${retryAfter} s`,
              'requests',
              null,
              'rate_limit_exceeded',
            ),
          );
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
              logprobs: engineReq.logprobs
                ? { content: tokens.map((t) => logprobEntry(t, asIds)), refusal: null }
                : null,
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
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      const includeUsage = body.stream_options?.include_usage === true;
      const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => {
        if (res.writableEnded || res.destroyed) return;
        const payload = {
          id,
          object: 'chat.completion.chunk',
          created,
          model: body.model,
          system_fingerprint: null,
          choices,
          ...(includeUsage ? { usage: null } : {}),
          ...extra,
        };
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
            chunk([
              {
                index: 0,
                delta: { content: t.text },
                logprobs: engineReq.logprobs ? { content: [logprobEntry(t, asIds)], refusal: null } : null,
                finish_reason: null,
              },
            ]);
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
    return new HttpError(
      503,
      'the request was cancelled because the model is being unloaded; try again',
      'server_error',
      null,
      'model_unloading',
    );
  }

  function engineFailure(e: unknown): HttpError {
    if (e instanceof HttpError) return e;
    if (e instanceof EngineRequestError) return invalid(e.message);
    if (e instanceof EngineOverloadedError)
      return new HttpError(429, `the server is busy: ${e.message}`, 'requests', null, 'rate_limit_exceeded');
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
