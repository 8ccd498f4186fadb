// A real OpenAI-compatible HTTP server for tests and benchmarks (node:http, no mocks): /v1/chat/completions
// streamed (SSE) and not, with per-token logprobs (token ids too, as vLLM's return_tokens_as_token_ids gives them) and usage; /v1/models; vLLM's /v1/load_lora_adapter and
// /v1/unload_lora_adapter with vLLM's answers (400 for a name already loaded, 404 for an unknown one; with
// `maxLoraRank`, it reads the adapter as vLLM does: 404 for a path with none, 400 for a rank too high). Every
// request is recorded. Faults are scripted per request (HTTP status with Retry-After, a connection dropped
// mid-stream, a slow first token, a request that never answers) or for a while (down for N ms: the port refuses
// connections, then listens again). Replies come from a generator the test gives (echo by default), streamed a
// word at a time with a fixed delay per token.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** Date.now() when the request arrived. */
  at: number;
}

export interface ChatBody {
  model: string;
  messages: { role: string; content: unknown }[];
  stream?: boolean;
  max_tokens?: number;
  logprobs?: boolean;
  top_logprobs?: number;
  return_tokens_as_token_ids?: boolean;
  seed?: number;
  temperature?: number;
  top_p?: number;
}

export type Fault =
  /** Answer with this status (and Retry-After seconds, when given) instead of a reply. */
  | { status: number; retryAfter?: number; body?: string }
  /** Stream this many tokens, then destroy the connection. */
  | { dropAfterTokens: number }
  /** Wait this long before the first token (streamed) or the reply (not streamed). */
  | { firstTokenDelayMs: number }
  /** Never answer (the client must time out); the socket is closed when the server closes. */
  | 'hang';

export interface OpenAiServerOptions {
  /** The base model's name, listed by /v1/models (default 'test-model'). */
  model?: string;
  /** Reported as max_model_len by /v1/models (vLLM does; default 4096). */
  maxModelLen?: number;
  /** The reply text for a request (default: echo of the last message). */
  reply?: (body: ChatBody, req: RecordedRequest) => string;
  /** Delay before each streamed token after the first (ms; default 0). */
  tokenDelayMs?: number;
  /** Called as each chat reply ends, with the server's own time on it (from its body read to its last byte). */
  onServed?: (body: ChatBody, ms: number) => void;
  /** When set, requests without `Authorization: Bearer <apiKey>` get 401. */
  apiKey?: string;
  /**
   * vLLM's --max-lora-rank. When set, a load reads the adapter from lora_path as vLLM does and refuses it with
   * vLLM's answers (vllm/entrypoints/openai/serving_models.py): 404 when the path has no adapter_config.json, 400
   * when its rank `r` is above this. Unset: any path loads.
   */
  maxLoraRank?: number;
  port?: number;
}

export interface OpenAiServer {
  /** `http://127.0.0.1:PORT/v1` */
  readonly url: string;
  readonly port: number;
  /** Every request in arrival order (all routes). */
  readonly requests: RecordedRequest[];
  /** The chat-completions requests only. */
  chatRequests(): RecordedRequest[];
  /** Load/unload calls in order: { op: 'load' | 'unload', name, path? }. */
  readonly adapterCalls: { op: 'load' | 'unload'; name: string; path?: string }[];
  /** Adapters loaded now, by name → path. */
  readonly adapters: Map<string, string>;
  /** Chat requests being answered now, and the most at once since the last resetStats(). */
  readonly stats: { active: number; maxActive: number };
  resetStats(): void;
  /** The next chat requests meet these faults, one each, in order. */
  fault(...faults: Fault[]): void;
  setReply(reply: (body: ChatBody, req: RecordedRequest) => string): void;
  setTokenDelay(ms: number): void;
  /** Refuses connections for `ms` (listening stops, open connections are cut), then listens on the same port again. */
  down(ms: number): Promise<void>;
  /** Resolves when the server listens again after `down`. */
  up(): Promise<void>;
  close(): Promise<void>;
}

/** The words of a reply as the "tokens" it is streamed in (each keeps its leading space). */
export function splitTokens(text: string): string[] {
  return text.match(/\s*\S+|\s+$/g) ?? [];
}

function echo(body: ChatBody): string {
  const last = body.messages[body.messages.length - 1];
  const content = typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
  return `You said: ${content.slice(0, 200)}`;
}

/** A fixed, token-dependent log-probability in (-2, 0]: not a model's, but stable for checks. */
/** A token's id in the fake vocabulary (a hash of its text), what return_tokens_as_token_ids reports. */
export function fakeTokenId(token: string): number {
  let h = 7;
  for (const ch of token) h = (h * 131 + ch.charCodeAt(0)) >>> 0;
  return h % 50_000;
}

export function fakeLogprob(token: string, i: number): number {
  let h = i;
  for (const ch of token) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return -((h % 2000) / 1000);
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function startOpenAiServer(options: OpenAiServerOptions = {}): Promise<OpenAiServer> {
  const model = options.model ?? 'test-model';
  let reply = options.reply ?? echo;
  let tokenDelayMs = options.tokenDelayMs ?? 0;
  const requests: RecordedRequest[] = [];
  const adapterCalls: OpenAiServer['adapterCalls'] = [];
  const adapters = new Map<string, string>();
  const faults: Fault[] = [];
  const sockets = new Set<Socket>();
  let created = 0;
  let upWaiters: (() => void)[] = [];
  let listening = false;
  const stats = { active: 0, maxActive: 0 };

  const json = (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(value));
  };
  const error = (res: ServerResponse, status: number, message: string, type = 'BadRequestError') =>
    json(res, status, { error: { message, type, code: status } });

  async function chat(rec: RecordedRequest, res: ServerResponse): Promise<void> {
    const t0 = performance.now();
    const body = rec.body as ChatBody;
    if (!body || typeof body.model !== 'string' || !Array.isArray(body.messages))
      return error(res, 400, 'model and messages are required');
    if (body.model !== model && !adapters.has(body.model))
      return error(res, 404, `The model \`${body.model}\` does not exist.`, 'NotFoundError');
    const fault = faults.shift();
    if (fault === 'hang') return;
    if (fault && 'status' in fault) {
      res.writeHead(fault.status, {
        'content-type': 'application/json',
        ...(fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {}),
      });
      res.end(
        fault.body ??
          JSON.stringify({
            error: { message: `scripted fault ${fault.status}`, type: 'ServerError', code: fault.status },
          }),
      );
      return;
    }
    const full = reply(body, rec);
    let tokens = splitTokens(full);
    let finish = 'stop';
    if (body.max_tokens !== undefined && tokens.length > body.max_tokens) {
      tokens = tokens.slice(0, body.max_tokens);
      finish = 'length';
    }
    const text = tokens.join('');
    const id = `chatcmpl-${++created}`;
    const promptTokens = body.messages.reduce(
      (a, m) => a + splitTokens(typeof m.content === 'string' ? m.content : JSON.stringify(m.content)).length + 4,
      0,
    );
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: tokens.length,
      total_tokens: promptTokens + tokens.length,
    };
    const lp = (t: string, i: number) => ({
      // vLLM's return_tokens_as_token_ids: the token as "token_id:<id>".
      token: body.return_tokens_as_token_ids ? `token_id:${fakeTokenId(t)}` : t,
      logprob: fakeLogprob(t, i),
      bytes: [...Buffer.from(t)],
      top_logprobs: Array.from({ length: body.top_logprobs ?? 0 }, (_, k) => ({
        token: k === 0 ? t : `${t}~${k}`,
        logprob: fakeLogprob(t, i) - k,
        bytes: null,
      })),
    });
    if (fault && 'firstTokenDelayMs' in fault) await sleep(fault.firstTokenDelayMs);

    if (!body.stream) {
      if (tokenDelayMs > 0) await sleep(tokenDelayMs * Math.max(0, tokens.length - 1));
      json(res, 200, {
        id,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: text },
            finish_reason: finish,
            logprobs: body.logprobs ? { content: tokens.map(lp) } : null,
          },
        ],
        usage,
      });
      options.onServed?.(body, performance.now() - t0);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const send = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      res.write(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: body.model, choices, ...extra })}\n\n`,
      );
    send([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
    for (let i = 0; i < tokens.length; i++) {
      if (fault && 'dropAfterTokens' in fault && i === fault.dropAfterTokens) {
        // Let what was written reach the client first: the reply really is cut mid-stream.
        await sleep(50);
        res.socket?.destroy();
        return;
      }
      if (i > 0 && tokenDelayMs > 0) await sleep(tokenDelayMs);
      if (res.destroyed) return;
      send([
        {
          index: 0,
          delta: { content: tokens[i] },
          logprobs: body.logprobs ? { content: [lp(tokens[i]!, i)] } : null,
          finish_reason: null,
        },
      ]);
    }
    send([{ index: 0, delta: {}, logprobs: null, finish_reason: finish }]);
    send([], { usage });
    res.end('data: [DONE]\n\n');
    options.onServed?.(body, performance.now() - t0);
  }

  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      let body: unknown = null;
      if (raw) {
        try {
          body = JSON.parse(raw);
        } catch {
          return error(res, 400, 'the body is not JSON');
        }
      }
      const path = (req.url ?? '').split('?')[0]!;
      const rec: RecordedRequest = { method: req.method ?? 'GET', path, headers: req.headers, body, at: Date.now() };
      requests.push(rec);
      if (options.apiKey && req.headers.authorization !== `Bearer ${options.apiKey}`)
        return error(res, 401, 'invalid API key', 'AuthenticationError');
      const b = body as { lora_name?: string; lora_path?: string } | null;
      if (req.method === 'POST' && path === '/v1/chat/completions') {
        stats.active++;
        stats.maxActive = Math.max(stats.maxActive, stats.active);
        res.once('close', () => stats.active--);
        chat(rec, res).catch((err) => {
          if (!res.headersSent) error(res, 500, (err as Error).message, 'InternalServerError');
          else res.destroy();
        });
      } else if (req.method === 'GET' && path === '/v1/models') {
        json(res, 200, {
          object: 'list',
          data: [
            {
              id: model,
              object: 'model',
              created: 0,
              owned_by: 'sweetloop-test',
              root: model,
              parent: null,
              max_model_len: options.maxModelLen ?? 4096,
            },
            ...[...adapters].map(([name, p]) => ({
              id: name,
              object: 'model',
              created: 0,
              owned_by: 'sweetloop-test',
              root: p,
              parent: model,
            })),
          ],
        });
      } else if (req.method === 'POST' && path === '/v1/load_lora_adapter') {
        if (!b?.lora_name || !b.lora_path)
          return error(res, 400, "Both 'lora_name' and 'lora_path' must be provided.", 'InvalidUserInput');
        adapterCalls.push({ op: 'load', name: b.lora_name, path: b.lora_path });
        if (adapters.has(b.lora_name))
          return error(res, 400, `The lora adapter '${b.lora_name}' has already been loaded.`, 'InvalidUserInput');
        const refused =
          options.maxLoraRank === undefined ? null : readAdapter(b.lora_name, b.lora_path, options.maxLoraRank);
        if (refused)
          return error(
            res,
            refused.status,
            refused.message,
            refused.status === 404 ? 'NotFoundError' : 'BadRequestError',
          );
        adapters.set(b.lora_name, b.lora_path);
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(`Success: LoRA adapter '${b.lora_name}' added successfully.`);
      } else if (req.method === 'POST' && path === '/v1/unload_lora_adapter') {
        if (!b?.lora_name)
          return error(res, 400, "either 'lora_name' and 'lora_int_id' needs to be provided.", 'InvalidUserInput');
        adapterCalls.push({ op: 'unload', name: b.lora_name });
        if (!adapters.delete(b.lora_name))
          return error(res, 404, `The lora adapter '${b.lora_name}' cannot be found.`, 'NotFoundError');
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(`Success: LoRA adapter '${b.lora_name}' removed successfully.`);
      } else {
        error(res, 404, `no route ${req.method} ${path}`, 'NotFoundError');
      }
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        listening = true;
        for (const w of upWaiters) w();
        upWaiters = [];
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      listening = false;
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });

  await listen(options.port ?? 0);
  const port = (server.address() as AddressInfo).port;
  let downTimer: NodeJS.Timeout | undefined;
  let closed = false;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    chatRequests: () => requests.filter((r) => r.path === '/v1/chat/completions'),
    adapterCalls,
    adapters,
    stats,
    resetStats: () => {
      stats.maxActive = stats.active;
    },
    fault: (...f) => void faults.push(...f),
    setReply: (r) => void (reply = r),
    setTokenDelay: (ms) => void (tokenDelayMs = ms),
    async down(ms) {
      await stop();
      downTimer = setTimeout(() => {
        if (!closed) void listen(port);
      }, ms);
    },
    up: () => (listening ? Promise.resolve() : new Promise<void>((r) => upWaiters.push(r))),
    async close() {
      closed = true;
      if (downTimer) clearTimeout(downTimer);
      if (listening) await stop();
    },
  };
}

/** Why vLLM would refuse to load the adapter at `path` (its messages), or null when it would load it. */
function readAdapter(name: string, path: string, maxRank: number): { status: number; message: string } | null {
  let config: { r?: unknown };
  try {
    config = JSON.parse(readFileSync(join(path, 'adapter_config.json'), 'utf8')) as { r?: unknown };
  } catch {
    return { status: 404, message: `Loading lora ${name} failed: No adapter found for ${path}` };
  }
  const rank = Number(config.r);
  if (rank > maxRank) return { status: 400, message: `LoRA rank ${rank} is greater than max_lora_rank ${maxRank}.` };
  return null;
}
