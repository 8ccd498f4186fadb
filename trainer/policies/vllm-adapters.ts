// LoRA adapters hot-loaded into a running vLLM server (started with --enable-lora and
// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True): POST /v1/load_lora_adapter {lora_name, lora_path} and
// /v1/unload_lora_adapter {lora_name}; requests then name the adapter as their model. Every call is idempotent
// (vLLM answers 400 to a name already loaded and 404 to an unknown one; both mean "already so" here), and names
// are versioned (adapterNameFor): reloading a name in place is recent in vLLM, so a new version is a new name.
// lora_path is read by the SERVER: it must be the adapter's directory as the server sees it (same machine or a
// shared mount).
import { endpointRequest } from '../../tasks/chat-client.ts';
import { EndpointRequestError, type ChatEndpoint } from '../../tasks/chat-endpoint.ts';
import type { Logger } from '../../tasks/logger.ts';

export interface ModelCard {
  id: string;
  /** vLLM: the base model's context length. */
  max_model_len?: number;
  /** vLLM: for an adapter, the base model it runs on. */
  parent?: string | null;
  root?: string | null;
}

/** The models (and adapters) a server offers, from GET /v1/models. */
export async function listModels(endpoint: ChatEndpoint, log?: Logger): Promise<ModelCard[]> {
  const r = (await endpointRequest(endpoint, 'get', '/models', undefined, { log })) as { data?: unknown };
  if (!r || !Array.isArray(r.data))
    throw new EndpointRequestError(`${endpoint.url}/models did not return a model list`, endpoint.url, undefined);
  return (r.data as ModelCard[]).filter((m) => m && typeof m.id === 'string');
}

/** The name an adapter version is loaded under: its version name plus a piece of its id, never reused. */
export function adapterNameFor(v: { name: string; id: string }): string {
  return `${v.name}-${v.id.replace(/-/g, '').slice(0, 8)}`;
}

const HINT =
  "start vLLM with --enable-lora (and --max-lora-rank at least the adapter's rank) and the environment variable VLLM_ALLOW_RUNTIME_LORA_UPDATING=True";

/** What to do about a refused load, by vLLM's reason (vllm/lora/worker_manager.py words them). */
function loadHint(reason: string): string {
  if (/No adapter found/i.test(reason))
    return 'The server reads the adapter from this path itself: it must see the same path (ADAPTERS_DIR on its machine, or a shared mount).';
  if (/max_lora_rank/i.test(reason))
    return "Start vLLM with --max-lora-rank at least the adapter's rank, and record it (`sweetloop policy update ENDPOINT --max-lora-rank N`).";
  return `If the server does not offer runtime loading, ${HINT}.`;
}

/** Loads an adapter; true when this call loaded it, false when the server had it already. */
export async function loadAdapter(endpoint: ChatEndpoint, name: string, path: string, log?: Logger): Promise<boolean> {
  try {
    await endpointRequest(
      endpoint,
      'post',
      '/load_lora_adapter',
      { lora_name: name, lora_path: path },
      { log, totalTimeoutMs: 120_000 },
    );
    log?.info({ endpoint: endpoint.url, adapter: name, path }, 'LoRA adapter loaded');
    return true;
  } catch (err) {
    if (err instanceof EndpointRequestError && err.status === 400 && /already been loaded/i.test(err.message))
      return false;
    if (err instanceof EndpointRequestError && (err.status === 404 || err.status === 400 || err.status === 405)) {
      throw new EndpointRequestError(
        `could not load LoRA adapter "${name}" from ${path}: ${err.message}. ${loadHint(err.message)}`,
        err.endpoint,
        err.status,
      );
    }
    throw err;
  }
}

/** Unloads an adapter; true when this call unloaded it, false when the server did not have it. */
export async function unloadAdapter(endpoint: ChatEndpoint, name: string, log?: Logger): Promise<boolean> {
  try {
    await endpointRequest(endpoint, 'post', '/unload_lora_adapter', { lora_name: name }, { log });
    log?.info({ endpoint: endpoint.url, adapter: name }, 'LoRA adapter unloaded');
    return true;
  } catch (err) {
    if (err instanceof EndpointRequestError && err.status === 404 && /cannot be found|not found/i.test(err.message))
      return false;
    throw err;
  }
}

// One load at a time per server and name in this process: two sessions starting together load once.
const loading = new Map<string, Promise<boolean>>();

/**
 * Makes sure the server has the adapter: a no-op when /v1/models lists it, a load otherwise (a restarted vLLM
 * forgets adapters loaded at run time). True when this call loaded it.
 */
export async function ensureLoaded(endpoint: ChatEndpoint, name: string, path: string, log?: Logger): Promise<boolean> {
  const key = `${endpoint.url}\u0000${name}`;
  const pending = loading.get(key);
  if (pending) return pending;
  const p = (async () => {
    const models = await listModels(endpoint, log);
    if (models.some((m) => m.id === name)) return false;
    return loadAdapter(endpoint, name, path, log);
  })().finally(() => loading.delete(key));
  loading.set(key, p);
  return p;
}
