// trainer/policies/: policy versions and where they are served. A PolicyVersion row becomes something that
// answers: a checkpoint served by Sweetloop's own server (trainer/serve/local.ts: the bot) or by the in-process
// tfjs worker (trainer/model/policy.ts: training, simulation), an agent over any OpenAI-compatible server
// (endpoint-agent.ts, through tasks/chat-client.ts), or a LoRA adapter hot-loaded into a vLLM server
// (vllm-adapters.ts); registry.ts registers endpoint and adapter versions, serving.ts checks their settings,
// adapter-check.ts and adapter-import.ts check and copy an adapter made elsewhere, lifecycle.ts moves an endpoint
// version's server and removes versions.
// Files here may import tasks/, prisma/ and trainer/.
//
// This file: the one way to get an Agent for a policy version, whatever serves it. Checkpoint and gguf versions
// (servedLocally) go through Sweetloop's own server: the bot's (opts.local), or for a gguf version without one a
// server of its own (simulate, evaluate). The bot's engine,
// simulate/evaluate and the benchmarks call loadAgent. Serving side effects live here, not in deploy (which is
// bookkeeping in prisma/deployment-store.ts): loading an adapter version makes sure the adapter is loaded into its
// server, and closing it unloads the adapter once the version is no longer deployed (the engine closes the
// agents of retired versions; the trainer closes what it evaluated).
import type { Logger } from '../../tasks/logger.ts';
import type { PolicyVersion, PrismaClient } from '../../prisma/generated/client.ts';
import { checkpointOf } from '../../prisma/policy-store.ts';
import { AgentUnavailableError, ownWeightsVersion, type Agent } from '../../tasks/agent.ts';
import type { ChatClientOptions } from '../../tasks/chat-client.ts';
import type { ChatEndpoint } from '../../tasks/chat-endpoint.ts';
import type { BackendChoice } from '../model/backend.ts';
import type { PolicyAgentOptions } from '../model/policy.ts';
import type { LocalCheckpointServer } from '../serve/local.ts';
import { createEndpointAgent } from './endpoint-agent.ts';
import { resolveServing, SERVING_DEFAULTS, servingOf, type Serving } from './serving.ts';
import { ensureLoaded, unloadAdapter } from './vllm-adapters.ts';

export interface LoadAgentOptions {
  /**
   * Adapter versions (required for them): their endpoint version's address and settings are read through it, and
   * at close() whether the version is still deployed (only one that is not is unloaded).
   */
  prisma?: PrismaClient;
  /** Base seed: reply k of a game is sampled with seed + k. */
  seed?: number;
  /** Checkpoint versions: the tfjs backend of the inference worker. */
  backend?: BackendChoice;
  /** Overrides the version's sampling (checkpoints: createPolicyAgent's defaults; endpoints: their serving settings). */
  sampling?: Partial<Pick<PolicyAgentOptions, 'temperature' | 'topP' | 'maxTokens'>>;
  /** Endpoint and adapter versions: timeouts, retries, in-flight cap of the chat client. */
  chat?: ChatClientOptions;
  /**
   * Checkpoint versions: serve them through Sweetloop's own OpenAI-compatible server (trainer/serve/local.ts)
   * and talk to it with the endpoint agent, as to any other server. Unset: the in-process tfjs worker.
   */
  local?: LocalCheckpointServer;
  /**
   * Checkpoint versions on `local`: ask it for per-token logprobs (default false: the trainer recomputes its own,
   * and llama.cpp then hands every token's whole distribution to JavaScript; provenance records "not requested").
   */
  localLogprobs?: boolean;
  log?: Logger;
}

export interface LoadedAgent extends Agent {
  readonly version: PolicyVersion;
  /** The same agent with another base seed (endpoint and adapter versions; one per simulated game). */
  withSeed?(seed: number): Agent;
  /** Frees what the agent holds (the inference worker; an adapter of a version no longer deployed). */
  close(): Promise<void>;
}

/**
 * Whether Sweetloop's own server (trainer/serve/local.ts) serves this kind: our checkpoints (or the tfjs worker in
 * process) and GGUF models made elsewhere (llama.cpp only). The bot hands such versions its local server.
 */
export function servedLocally(kind: string): boolean {
  return kind === 'checkpoint' || kind === 'gguf';
}

export async function loadAgent(policy: PolicyVersion, opts: LoadAgentOptions = {}): Promise<LoadedAgent> {
  if (policy.status === 'removed')
    throw new Error(`policy version "${policy.name}" was removed: it is not served any more`);
  if (servedLocally(policy.kind) && opts.local) return localCheckpointAgent(policy, opts.local, opts);
  if (policy.kind === 'gguf') return ownServerAgent(policy, opts);
  if (policy.kind === 'checkpoint') {
    const { createPolicyAgent } = await import('../model/policy.ts');
    const agent = await createPolicyAgent({
      checkpointDir: checkpointOf(policy),
      name: policy.name,
      weightsVersion: ownWeightsVersion(policy.name, policy.checkpointSha256),
      ...opts.sampling,
      ...(opts.backend ? { backend: opts.backend } : {}),
      ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
    });
    return { name: agent.name, version: policy, reply: (d, o) => agent.reply(d, o), close: () => agent.close() };
  }

  if (policy.kind === 'adapter' && !opts.prisma)
    throw new Error(
      `adapter version "${policy.name}": loading it needs the database (its endpoint version's settings)`,
    );
  const serving = {
    ...(opts.prisma ? await resolveServing(opts.prisma, policy) : servingOf(policy)),
    ...opts.sampling,
  };
  const common = {
    name: policy.name,
    serving,
    client: opts.chat ?? {},
    ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  };
  if (policy.kind === 'endpoint') {
    const agent = await createEndpointAgent(common);
    return { name: agent.name, version: policy, reply: agent.reply, withSeed: agent.withSeed, close: agent.close };
  }
  if (policy.kind !== 'adapter')
    throw new Error(`policy version "${policy.name}" has an unknown kind "${policy.kind}"`);

  const endpoint: ChatEndpoint = { url: serving.url, apiKeyEnv: serving.apiKeyEnv ?? null };
  const adapterName = serving.adapterName!;
  const adapterDir = checkpointOf(policy);
  // Loaded before the first reply; a server that is down now is not a reason to fail the load: the reply then
  // raises AgentUnavailableError, which callers wait out like any other outage.
  let loaded: Promise<void> | null = null;
  const ensure = (): Promise<void> =>
    (loaded ??= ensureLoaded(endpoint, adapterName, adapterDir, opts.log).then(
      () => {},
      (err: unknown) => {
        loaded = null;
        throw err;
      },
    ));
  try {
    await ensure();
  } catch (err) {
    if (!(err instanceof AgentUnavailableError)) throw err;
    opts.log?.warn({ policy: policy.name, err: err.message }, 'adapter not loaded yet: its server is unavailable');
  }
  const agent = await createEndpointAgent({
    ...common,
    adapter: adapterName,
    onModelMissing: () => {
      loaded = null;
      return ensure();
    },
  });
  const whenLoaded =
    (a: Agent): Agent['reply'] =>
    async (dialogue, o) => {
      await ensure();
      return a.reply(dialogue, o);
    };
  let closed = false;
  return {
    name: agent.name,
    version: policy,
    reply: whenLoaded(agent),
    withSeed: (seed) => ({ name: agent.name, reply: whenLoaded(agent.withSeed(seed)) }),
    async close() {
      if (closed) return;
      closed = true;
      if (!opts.prisma) return;
      const now = await opts.prisma.policyVersion.findUnique({ where: { id: policy.id }, select: { status: true } });
      if (now?.status === 'deployed') return;
      try {
        await unloadAdapter(endpoint, adapterName, opts.log);
      } catch (err) {
        // A server that is down has no adapters to free (a restart forgets runtime-loaded ones).
        opts.log?.warn(
          { policy: policy.name, adapter: adapterName, err: (err as Error).message },
          'could not unload the adapter',
        );
        if (!(err instanceof AgentUnavailableError)) throw err;
      }
    },
  };
}

/**
 * A checkpoint version served by the local server: the endpoint agent asking for `model` = the version's name,
 * its prompt counted with the checkpoint's tokenizer in the window the engine holds, the reply budget that of the
 * in-process agent (replyReserve), provenance.engine the engine that answered (llama or tfjs). The version is
 * loaded before the agent exists and held until close(), whatever is deployed meanwhile.
 */
async function localCheckpointAgent(
  policy: PolicyVersion,
  local: LocalCheckpointServer,
  opts: LoadAgentOptions,
): Promise<LoadedAgent> {
  const { replyReserve } = await import('../model/policy.ts');
  const served = await local.acquire(policy);
  try {
    const sampling = { ...SERVING_DEFAULTS, ...ggufSampling(policy), ...opts.sampling };
    const serving: Serving = {
      url: served.url,
      model: served.model,
      contextWindow: served.contextWindow,
      temperature: sampling.temperature,
      topP: sampling.topP,
      maxTokens: replyReserve(served.contextWindow, sampling.maxTokens),
      ...(served.countTokens ? {} : { baseModelDir: served.checkpointDir }),
    };
    // The server queues and batches: a reply may wait behind many others, so only the whole-reply deadline applies.
    // Its own queue and 429s pace the requests: the client's in-flight cap is set to what it accepts.
    const client: ChatClientOptions = {
      firstTokenTimeoutMs: LOCAL_REPLY_TIMEOUT_MS,
      totalTimeoutMs: LOCAL_REPLY_TIMEOUT_MS,
      maxInFlight: served.maxInFlight,
      ...opts.chat,
    };
    const agent = await createEndpointAgent({
      name: policy.name,
      serving,
      client,
      logprobs: opts.localLogprobs ?? false,
      // Our own engines always know their token ids: recorded when this process asks for logprobs at all.
      recordTokens: opts.localLogprobs ?? false,
      weightsVersion: ownWeightsVersion(policy.name, policy.checkpointSha256),
      ...(served.countTokens ? { countTokens: served.countTokens } : {}),
      ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
      ...(opts.log ? { log: opts.log } : {}),
    });
    const tagged =
      (reply: Agent['reply']): Agent['reply'] =>
      async (dialogue, o) => {
        const r = await reply(dialogue, o);
        return r.provenance
          ? {
              ...r,
              provenance: {
                ...r.provenance,
                engine: served.engine,
                ...(served.weights ? { weights: served.weights } : {}),
              },
            }
          : r;
      };
    let closed = false;
    return {
      name: agent.name,
      version: policy,
      reply: tagged(agent.reply),
      withSeed: (seed) => {
        const a = agent.withSeed(seed);
        return { name: a.name, reply: tagged(a.reply) };
      },
      async close() {
        if (closed) return;
        closed = true;
        await local.release(policy);
      },
    };
  } catch (err) {
    await local.release(policy);
    throw err;
  }
}

const LOCAL_REPLY_TIMEOUT_MS = 10 * 60_000;

/**
 * A gguf version where no local server was handed in (simulate, evaluate, the benchmarks): a server of its own,
 * llama.cpp only, closed with the agent. Sampling defaults are the version's (serving.temperature/topP/maxTokens).
 */
async function ownServerAgent(policy: PolicyVersion, opts: LoadAgentOptions): Promise<LoadedAgent> {
  if (!opts.prisma) throw new Error(`gguf version "${policy.name}": loading it needs the database`);
  const { LocalServing } = await import('../serve/local.ts');
  const { SERVE_DEFAULTS } = await import('../serve/defaults.ts');
  const local = await LocalServing.start({
    engine: 'llama',
    maxBatch: SERVE_DEFAULTS.maxBatch,
    maxQueue: SERVE_DEFAULTS.maxQueue,
    prisma: opts.prisma,
    ...(opts.log ? { log: opts.log } : {}),
  });
  try {
    const agent = await localCheckpointAgent(policy, local, opts);
    return {
      ...agent,
      async close() {
        await agent.close();
        await local.close();
      },
    };
  } catch (err) {
    await local.close();
    throw err;
  }
}

/** A gguf version's own sampling settings (registered with it), where it has them. */
export function ggufSampling(
  policy: Pick<PolicyVersion, 'serving'>,
): Partial<Pick<PolicyAgentOptions, 'temperature' | 'topP' | 'maxTokens'>> {
  const s = (policy.serving ?? {}) as Record<string, unknown>;
  const out: Partial<Pick<PolicyAgentOptions, 'temperature' | 'topP' | 'maxTokens'>> = {};
  if (typeof s.temperature === 'number') out.temperature = s.temperature;
  if (typeof s.topP === 'number') out.topP = s.topP;
  if (typeof s.maxTokens === 'number') out.maxTokens = s.maxTokens;
  return out;
}
