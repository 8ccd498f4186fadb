// The endpoint side of the one chat-completions client (chat-client.ts): which server a request goes to (its
// URL), with which key, through which SDK client and in-flight cap, and the errors that say how it failed, with
// the reading of the SDK's errors that sorts them. endpointRequest (chat-client.ts) shares all of it.
// The key is read from an environment variable whose NAME the caller gives; it is never logged, stored or put in
// an error message (messages are scrubbed of it in case a server echoes it back).
import { AsyncLocalStorage } from 'node:async_hooks';
import OpenAI, { type APIError } from 'openai';
import pLimit, { type LimitFunction } from 'p-limit';
import type { Logger } from './logger.ts';
import { AgentUnavailableError } from './agent.ts';

export interface ChatEndpoint {
  /** Base URL (`http://host:8000/v1`) or the full `/chat/completions` URL. */
  url: string;
  /** Name of the environment variable that holds the key; unset: no Authorization header is sent. */
  apiKeyEnv?: string | null | undefined;
  /** A key the caller already holds from validated config (the simulator's SIMULATOR_LLM_KEY); wins over apiKeyEnv. */
  apiKey?: string | null | undefined;
}

/** The endpoint cannot answer now (down, overloaded, too slow) after the retries: try the same request later. */
export class EndpointUnavailableError extends AgentUnavailableError {
  override name = 'EndpointUnavailableError';
  constructor(
    message: string,
    readonly endpoint: string,
    readonly status: number | undefined,
    readonly attempts: number,
    retryAfterMs?: number,
  ) {
    super(message, retryAfterMs);
  }
}

/** The endpoint refused the request (400, 401, 403, 404, 422 ...) or answered something that is not a reply. */
export class EndpointRequestError extends Error {
  override name = 'EndpointRequestError';
  constructor(
    message: string,
    readonly endpoint: string,
    readonly status: number | undefined,
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Endpoints

/** `http://host/v1` from either form of the URL (trailing slashes and `/chat/completions` removed). */
export function endpointBaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new EndpointRequestError(`"${url}" is not a URL (expected e.g. http://127.0.0.1:8000/v1)`, url, undefined);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new EndpointRequestError(`"${url}" is not an http(s) URL`, url, undefined);
  }
  return url.replace(/\/+$/, '').replace(/\/chat\/completions$/, '');
}

/** The URL as it may appear in logs and messages: without user:password. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString().replace(/\/+$/, '');
  } catch {
    return url;
  }
}

/** The key for an endpoint: given directly, or read from the named variable (an unset variable is an error). */
export function resolveKey(endpoint: ChatEndpoint): string | null {
  if (endpoint.apiKey) return endpoint.apiKey;
  if (!endpoint.apiKeyEnv) return null;
  const key = process.env[endpoint.apiKeyEnv];
  if (!key) {
    throw new EndpointRequestError(
      `the key for ${displayUrl(endpoint.url)} is read from the environment variable ${endpoint.apiKeyEnv}, which is not set`,
      displayUrl(endpoint.url),
      undefined,
    );
  }
  return key;
}

// HTTP attempts of the current call, counted by the fetch every SDK client uses (the SDK retries inside one
// `create`, invisibly to us otherwise).
export const attemptScope = new AsyncLocalStorage<{ count: number }>();
const countingFetch: typeof fetch = (input, init) => {
  const scope = attemptScope.getStore();
  if (scope) scope.count++;
  return fetch(input, init);
};

const clients = new Map<string, OpenAI>();
const limiters = new Map<string, LimitFunction>();

export function sdkClient(base: string, key: string | null, log: Logger | undefined): OpenAI {
  // One SDK client per endpoint and key (its connection pool is reused); the key is part of the map key only
  // in memory.
  const id = `${base}\u0000${key ?? ''}`;
  let c = clients.get(id);
  if (!c) {
    c = new OpenAI({
      baseURL: base,
      // The SDK insists on a key; with none configured, send no Authorization header at all rather than a
      // made-up one (and never fall back to OPENAI_API_KEY: that key is for OpenAI, not for this server).
      apiKey: key ?? 'no-key',
      ...(key ? {} : { defaultHeaders: { Authorization: null } }),
      organization: null,
      project: null,
      fetch: countingFetch,
      ...(log ? { logger: sdkLogger(log), logLevel: 'warn' as const } : { logLevel: 'off' as const }),
    });
    clients.set(id, c);
  }
  return c;
}

/** The SDK's own warnings (retries, deprecations) as lines of our log, marked as coming from it. */
function sdkLogger(log: Logger) {
  const at = (level: 'debug' | 'info' | 'warn' | 'error') => (message: string) =>
    log[level]({ component: 'openai-sdk' }, message);
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** The process-wide in-flight cap of an endpoint. */
export function endpointLimiter(base: string, maxInFlight = 16): LimitFunction {
  let l = limiters.get(base);
  if (!l) {
    l = pLimit(Math.max(1, maxInFlight));
    limiters.set(base, l);
  } else if (maxInFlight < l.concurrency) {
    l.concurrency = Math.max(1, maxInFlight);
  }
  return l;
}

export function retryAfterOf(headers: Headers | undefined): number | undefined {
  const ms = headers?.get('retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Number(ms);
  const s = headers?.get('retry-after');
  if (!s) return undefined;
  if (Number.isFinite(Number(s))) return Number(s) * 1000;
  const at = Date.parse(s);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** The server's words from an SDK error, without the SDK's leading status code. */
export function detailOf(err: APIError): string {
  return err.message.replace(/^\d{3}\s+/, '').slice(0, 300);
}
