// After registration: loading an adapter version into its server before a deploy, moving an endpoint version to
// another server address, and taking a version out of service. The bookkeeping (rules, status, audit) is
// prisma/policy-store.ts's (a deploy's, deployment-store.ts's); what touches a server is here, beside agent-for.ts:
// a deploy of an adapter asks its server to load it, an update asks the new address that it serves the model, a
// removal unloads the adapter when the server has it loaded. Adapter versions refer to their endpoint version (serving.ts), so an update moves them too.
import type { PolicyVersion, Prisma, PrismaClient } from '../../prisma/generated/client.ts';
import {
  checkpointOf,
  PolicyError,
  removableVersion,
  removePolicyVersion,
  updateServing,
} from '../../prisma/policy-store.ts';
import { AgentUnavailableError } from '../../tasks/agent.ts';
import { endpointBaseUrl, EndpointRequestError } from '../../tasks/chat-endpoint.ts';
import type { Logger } from '../../tasks/logger.ts';
import { checkBaseModelDir, checkServesModel, RegistryError } from './registry.ts';
import { resolveServing, servingOf, servingSchema } from './serving.ts';
import { ensureLoaded, listModels, unloadAdapter } from './vllm-adapters.ts';

export interface EndpointUpdate {
  /** The server's new base URL. */
  url?: string | undefined;
  /** The server's largest LoRA rank (vLLM's --max-lora-rank). */
  maxLoraRank?: number | undefined;
  /** Requests kept in flight to the server at once (vLLM's --max-num-seqs). */
  maxInFlight?: number | undefined;
  /** The served model's Hugging Face directory (token counts; what the trainer trains a LoRA adapter on). */
  baseModelDir?: string | undefined;
  /** Store each agent turn's exact tokens (serving.recordTokens): true on, false off. */
  recordTokens?: boolean | undefined;
  /** The served weights' revision, recorded with the tokens (serving.revision). */
  revision?: string | undefined;
  /** Ask the new address that it serves the version's model first (default true). */
  check?: boolean;
  actor: string;
  log?: Logger;
}

/** The serving settings `policy update` changes (each audited with its old and new value). */
const UPDATABLE = ['url', 'maxLoraRank', 'maxInFlight', 'baseModelDir', 'recordTokens', 'revision'] as const;

/** Changes where an endpoint version is served (its adapter versions follow); returns the row and its adapters' names. */
export async function updateEndpointVersion(
  prisma: PrismaClient,
  name: string,
  u: EndpointUpdate,
): Promise<{ version: PolicyVersion; adapters: string[] }> {
  const v = await prisma.policyVersion.findUnique({ where: { name } });
  if (!v) throw new RegistryError(`unknown endpoint version "${name}"`);
  if (v.kind === 'adapter')
    throw new RegistryError(
      `"${name}" is an adapter version: it follows its endpoint version; update that one instead`,
    );
  if (v.kind !== 'endpoint')
    throw new RegistryError(`"${name}" is a ${v.kind} version: only an endpoint version has a server address`);
  if (UPDATABLE.every((k) => u[k] === undefined)) {
    throw new RegistryError(
      'nothing to update: give --endpoint URL, --max-lora-rank N, --max-in-flight N, --base-model-dir DIR, --record-tokens or --no-record-tokens, and/or --revision REV',
    );
  }
  const before = servingOf(v);
  const next = {
    ...before,
    ...(u.url !== undefined ? { url: endpointBaseUrl(u.url) } : {}),
    ...(u.maxLoraRank !== undefined ? { maxLoraRank: u.maxLoraRank } : {}),
    ...(u.maxInFlight !== undefined ? { maxInFlight: u.maxInFlight } : {}),
    ...(u.baseModelDir !== undefined ? { baseModelDir: checkBaseModelDir(u.baseModelDir) } : {}),
    ...(u.recordTokens !== undefined ? { recordTokens: u.recordTokens } : {}),
    ...(u.revision !== undefined ? { revision: u.revision } : {}),
  };
  const parsed = servingSchema.safeParse(next);
  if (!parsed.success)
    throw new RegistryError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  if (u.url !== undefined && (u.check ?? true))
    await checkServesModel(parsed.data.url, parsed.data.model, parsed.data.apiKeyEnv, u.log);
  const changed: Record<string, { from: unknown; to: unknown }> = {};
  for (const k of UPDATABLE)
    if (before[k] !== parsed.data[k]) changed[k] = { from: before[k] ?? null, to: parsed.data[k] ?? null };
  const version = await updateServing(prisma, u.actor, v, parsed.data as Prisma.InputJsonObject, { changed });
  const adapters = await prisma.policyVersion.findMany({
    where: { kind: 'adapter', status: { not: 'removed' }, serving: { path: ['endpointVersionId'], equals: v.id } },
    select: { name: true },
    orderBy: { createdAt: 'asc' },
  });
  return { version, adapters: adapters.map((a) => a.name) };
}

/** What a deploy's load did: the adapter's name on its server, and whether this call loaded it (false: it had it). */
export interface DeployLoad {
  adapter: string;
  url: string;
  loaded: boolean;
}

/**
 * Asks an adapter version's server to load it before a deploy switches to it (the `prepare` of
 * prisma/deployment-store.ts switchDeployedPolicy), so that a path the server cannot read or a rank it refuses stops
 * the deploy with the server's reason instead of failing at a person's first session. Other kinds: null, nothing
 * asked. A PolicyError when the server refuses or cannot be reached.
 */
export async function loadBeforeDeploy(
  prisma: PrismaClient,
  v: PolicyVersion,
  log?: Logger,
): Promise<DeployLoad | null> {
  if (v.kind !== 'adapter') return null;
  const s = await resolveServing(prisma, v);
  const adapter = s.adapterName!;
  try {
    const loaded = await ensureLoaded({ url: s.url, apiKeyEnv: s.apiKeyEnv ?? null }, adapter, checkpointOf(v), log);
    return { adapter, url: s.url, loaded };
  } catch (err) {
    if (err instanceof AgentUnavailableError) {
      throw new PolicyError(
        `"${v.name}" was not deployed: its server ${s.url} cannot be reached to load the adapter (${err.message}). Deploy it with --no-check if the server is down on purpose: the adapter is then loaded at the first session.`,
      );
    }
    if (err instanceof EndpointRequestError)
      throw new PolicyError(
        `"${v.name}" was not deployed: its server ${s.url} did not load the adapter: ${err.message}`,
      );
    throw err;
  }
}

export type UnloadOutcome = 'unloaded' | 'not loaded' | 'server unavailable';

/**
 * Removes a version (prisma/policy-store.ts removePolicyVersion: never the deployed one, the row kept, audited).
 * An adapter version is unloaded from its server first when the server lists it; a server that is down has
 * nothing to unload (a restart forgets runtime adapters), which the audit entry records.
 */
export async function removeVersion(
  prisma: PrismaClient,
  name: string,
  o: { actor: string; log?: Logger },
): Promise<{ version: PolicyVersion; unload: UnloadOutcome | null }> {
  const v = await removableVersion(prisma, name);
  let unload: UnloadOutcome | null = null;
  if (v.kind === 'adapter') {
    const s = await resolveServing(prisma, v);
    const endpoint = { url: s.url, apiKeyEnv: s.apiKeyEnv ?? null };
    try {
      const loaded = (await listModels(endpoint, o.log)).some((m) => m.id === s.adapterName);
      unload = loaded && (await unloadAdapter(endpoint, s.adapterName!, o.log)) ? 'unloaded' : 'not loaded';
    } catch (err) {
      if (!(err instanceof AgentUnavailableError)) throw err;
      o.log?.warn({ policy: v.name, endpoint: s.url, err: err.message }, 'server unavailable: nothing to unload');
      unload = 'server unavailable';
    }
  }
  const version = await removePolicyVersion(
    prisma,
    o.actor,
    name,
    unload ? { adapterName: (v.serving as { adapterName?: string }).adapterName ?? null, unload } : {},
  );
  return { version, unload };
}
