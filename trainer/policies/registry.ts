// Registering policy versions made elsewhere: a 'gguf' version (a GGUF model file run by Sweetloop's own llama.cpp
// engine with the file's tokenizer and chat template), an 'endpoint' version (a model behind an
// OpenAI-compatible server) and an 'adapter' version (a LoRA adapter directory in PEFT layout, served on top of
// an endpoint version's model). This file checks what a person asked for; the row (a candidate, like any new
// version) is written by prisma/policy-store.ts's registerVersion, deploying is prisma/deployment-store.ts's job,
// and loading is agent-for.ts's; an adapter made elsewhere is checked and copied first (adapter-import.ts). The key is never stored: only the name of the environment variable that holds it.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Logger } from '../../tasks/logger.ts';
import type { Prisma, PolicyVersion, PrismaClient } from '../../prisma/generated/client.ts';
import { registerVersion } from '../../prisma/policy-store.ts';
import { endpointBaseUrl, EndpointUnavailableError } from '../../tasks/chat-endpoint.ts';
import { adapterServing, SERVING_DEFAULTS, servingOf, servingSchema } from './serving.ts';
import { listModels, type ModelCard } from './vllm-adapters.ts';

/** A registration that cannot be done; the message is meant for the person who asked. */
export class RegistryError extends Error {
  override name = 'RegistryError';
}

export interface EndpointRegistration {
  name: string;
  url: string;
  model: string;
  apiKeyEnv?: string | undefined;
  /** Tokens; default: the server's max_model_len when it reports one (vLLM does). */
  contextWindow?: number | undefined;
  temperature?: number | undefined;
  topP?: number | undefined;
  maxTokens?: number | undefined;
  baseModelDir?: string | undefined;
  /** The server's largest LoRA rank (vLLM's --max-lora-rank); unset: the VLLM_MAX_LORA_RANK setting applies. */
  maxLoraRank?: number | undefined;
  /** Requests kept in flight to the server at once (serving.maxInFlight; vLLM's --max-num-seqs). */
  maxInFlight?: number | undefined;
  /** Store each agent turn's exact token ids and log-probabilities (serving.recordTokens). */
  recordTokens?: boolean | undefined;
  /** The served weights' revision, recorded with the tokens (serving.revision). */
  revision?: string | undefined;
  /** Ask the server's /v1/models first (default true): it must answer and list the model. */
  check?: boolean;
  log?: Logger;
}

export async function assertNewName(prisma: PrismaClient, name: string): Promise<void> {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$/.test(name)) {
    throw new RegistryError(
      `"${name}" is not a usable version name: use letters, digits, '.', '_' and '-' (at most 80 characters)`,
    );
  }
  if (await prisma.policyVersion.findUnique({ where: { name }, select: { id: true } })) {
    throw new RegistryError(`a policy version named "${name}" already exists: choose another name`);
  }
}

/**
 * Asks the server at `url` (GET /models) that it serves `model`; returns the model's card. A RegistryError says
 * what went wrong (server down, wrong key, model not served).
 */
export async function checkServesModel(
  url: string,
  model: string,
  apiKeyEnv: string | null | undefined,
  log?: Logger,
): Promise<ModelCard> {
  const models = await listModels({ url, apiKeyEnv: apiKeyEnv ?? null }, log).catch((err: Error) => {
    const hint =
      err instanceof EndpointUnavailableError
        ? 'is the server running? (register anyway with --no-check)'
        : 'check the URL and the key';
    throw new RegistryError(`${url} did not answer GET /models: ${err.message}; ${hint}`);
  });
  const card = models.find((m) => m.id === model);
  if (!card)
    throw new RegistryError(
      `${url} does not serve a model named "${model}"; it serves: ${models.map((m) => m.id).join(', ') || 'nothing'}`,
    );
  return card;
}

/**
 * A served model's Hugging Face directory (exact token counts, the base for LoRA training) must hold its
 * tokenizer; returns the absolute path that is stored. One check for add --endpoint, add --gguf and update.
 */
export function checkBaseModelDir(dir: string): string {
  if (!existsSync(join(dir, 'tokenizer.json'))) {
    throw new RegistryError(
      `${dir} has no tokenizer.json: --base-model-dir must be the served model's Hugging Face directory`,
    );
  }
  return resolve(dir);
}

/** Registers an endpoint version (status candidate, algorithm 'external'); returns the stored row. */
export async function registerEndpointVersion(prisma: PrismaClient, r: EndpointRegistration): Promise<PolicyVersion> {
  await assertNewName(prisma, r.name);
  const url = endpointBaseUrl(r.url);
  let contextWindow = r.contextWindow;
  if (r.check ?? true) {
    const card = await checkServesModel(url, r.model, r.apiKeyEnv, r.log);
    contextWindow ??= typeof card.max_model_len === 'number' ? card.max_model_len : undefined;
  }
  if (contextWindow === undefined)
    throw new RegistryError(`give the model's context window (--context-window N): the server did not report one`);
  if (r.baseModelDir) checkBaseModelDir(r.baseModelDir);
  const candidate = {
    url,
    model: r.model,
    ...(r.apiKeyEnv ? { apiKeyEnv: r.apiKeyEnv } : {}),
    contextWindow,
    temperature: r.temperature ?? SERVING_DEFAULTS.temperature,
    topP: r.topP ?? SERVING_DEFAULTS.topP,
    maxTokens: r.maxTokens ?? SERVING_DEFAULTS.maxTokens,
    ...(r.baseModelDir ? { baseModelDir: resolve(r.baseModelDir) } : {}),
    ...(r.maxLoraRank !== undefined ? { maxLoraRank: r.maxLoraRank } : {}),
    ...(r.maxInFlight !== undefined ? { maxInFlight: r.maxInFlight } : {}),
    ...(r.recordTokens ? { recordTokens: true } : {}),
    ...(r.revision !== undefined ? { revision: r.revision } : {}),
  };
  const parsed = servingSchema.safeParse(candidate);
  if (!parsed.success)
    throw new RegistryError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  if (parsed.data.maxTokens >= parsed.data.contextWindow) {
    throw new RegistryError(
      `--max-tokens ${parsed.data.maxTokens} leaves no room for the dialogue in a ${parsed.data.contextWindow}-token window`,
    );
  }
  return registerVersion(prisma, {
    name: r.name,
    algorithm: 'external',
    kind: 'endpoint',
    checkpointPath: null,
    serving: parsed.data as Prisma.InputJsonObject,
  });
}

export interface AdapterRegistration {
  name: string;
  /** The endpoint version whose server serves the base model. */
  endpoint: PolicyVersion;
  /** Directory with adapter_config.json and adapter_model.safetensors, as the trainer writes it. */
  adapterDir: string;
  algorithm: string;
  parentId?: string | null;
  trainingRunId?: string | null;
  checkpointSha256?: string | null;
  metrics?: Prisma.InputJsonValue;
  /** An audit entry written with the row (`sweetloop policy add --adapter`: 'policy.add'). */
  audit?: { actor: string; action: string; detail?: Record<string, unknown> };
}

/**
 * Registers "adapter A on endpoint E" (status candidate): the row refers to the endpoint version (whose address
 * and settings it follows) and names the adapter on the server with a versioned name.
 */
export async function registerAdapterVersion(prisma: PrismaClient, r: AdapterRegistration): Promise<PolicyVersion> {
  await assertNewName(prisma, r.name);
  if (r.endpoint.kind !== 'endpoint')
    throw new RegistryError(
      `"${r.endpoint.name}" is a ${r.endpoint.kind} version: adapters are served on an endpoint version`,
    );
  if (r.endpoint.status === 'removed')
    throw new RegistryError(`"${r.endpoint.name}" was removed: adapters cannot be added on it`);
  servingOf(r.endpoint); // its settings must be usable
  const { ADAPTER_CONFIG, ADAPTER_WEIGHTS } = await import('../model/lora.ts');
  for (const f of [ADAPTER_CONFIG, ADAPTER_WEIGHTS]) {
    if (!existsSync(join(r.adapterDir, f)))
      throw new RegistryError(`${r.adapterDir} has no ${f}: an adapter version needs a PEFT adapter directory`);
  }
  return registerVersion(prisma, {
    name: r.name,
    algorithm: r.algorithm,
    kind: 'adapter',
    checkpointPath: resolve(r.adapterDir),
    checkpointSha256: r.checkpointSha256 ?? null,
    parentId: r.parentId ?? null,
    trainingRunId: r.trainingRunId ?? null,
    ...(r.metrics !== undefined ? { metrics: r.metrics } : {}),
    ...(r.audit ? { audit: r.audit } : {}),
    serving: adapterServing(r.endpoint.id),
  });
}

export interface GgufRegistration {
  name: string;
  /** A .gguf file's path, or hf:OWNER/REPO/FILE.gguf (downloaded once into modelsDir). */
  source: string;
  modelsDir: string;
  temperature?: number | undefined;
  topP?: number | undefined;
  maxTokens?: number | undefined;
  /** The same model's Hugging Face directory: what training from this version needs (the trainer reads it). */
  baseModelDir?: string | undefined;
  /** The hub's address (tests: a local server); default https://huggingface.co. */
  hubEndpoint?: string;
  hubToken?: string;
  hubTimeoutMs?: number;
  onProgress?: (p: { downloadedBytes: number; totalBytes: number }) => void;
  audit?: { actor: string; action: string; detail?: Record<string, unknown> };
}

/**
 * Registers a 'gguf' version (status candidate, algorithm 'external'): a GGUF model made elsewhere, served by
 * Sweetloop's own llama.cpp engine with the file's tokenizer and chat template. The file is fetched (hf:), checked
 * (trainer/serve/gguf-foreign.ts: the fault named), compared with the hub's sha256 when it gave one, and loaded
 * once in a child process before anything is written. The row records the file, its sha256 and quantization.
 */
export async function registerGgufVersion(
  prisma: PrismaClient,
  r: GgufRegistration,
): Promise<{ version: PolicyVersion; downloaded: boolean }> {
  await assertNewName(prisma, r.name);
  if (r.baseModelDir) checkBaseModelDir(r.baseModelDir);
  const { resolveGgufSource, GgufSourceError } = await import('../serve/gguf-source.ts');
  const { inspectForeignGguf } = await import('../serve/gguf-foreign.ts');
  const { GgufValidationError } = await import('../serve/gguf-validate.ts');
  const { GgufFormatError } = await import('../serve/gguf.ts');
  const resolved = await resolveGgufSource(r.source, {
    modelsDir: r.modelsDir,
    ...(r.hubEndpoint ? { endpoint: r.hubEndpoint } : {}),
    ...(r.hubToken ? { token: r.hubToken } : {}),
    ...(r.hubTimeoutMs ? { timeoutMs: r.hubTimeoutMs } : {}),
    ...(r.onProgress ? { onProgress: r.onProgress } : {}),
  }).catch((err: unknown) => {
    throw err instanceof GgufSourceError ? new RegistryError(err.message) : err;
  });
  const info = await inspectForeignGguf(resolved.file).catch((err: unknown) => {
    throw err instanceof GgufValidationError || err instanceof GgufFormatError ? new RegistryError(err.message) : err;
  });
  if (resolved.hubSha256 && info.sha256 !== resolved.hubSha256) {
    const { rm } = await import('node:fs/promises');
    await rm(resolved.file, { force: true });
    throw new RegistryError(
      `${r.source}: the download's sha256 ${info.sha256} is not the hub's ${resolved.hubSha256}: the file was deleted; run the command again`,
    );
  }
  const { probeGgufInChild } = await import('../serve/llama-load.ts');
  await probeGgufInChild(resolved.file).catch((err: Error) => {
    throw new RegistryError(err.message);
  });
  const serving = {
    source: r.source,
    quantization: info.quantization,
    architecture: info.architecture,
    modelName: info.modelName,
    contextLength: info.contextLength,
    sizeBytes: info.sizeBytes,
    temperature: r.temperature ?? SERVING_DEFAULTS.temperature,
    topP: r.topP ?? SERVING_DEFAULTS.topP,
    maxTokens: r.maxTokens ?? SERVING_DEFAULTS.maxTokens,
    ...(r.baseModelDir ? { baseModelDir: resolve(r.baseModelDir) } : {}),
  };
  if (serving.maxTokens >= info.contextLength)
    throw new RegistryError(
      `--max-tokens ${serving.maxTokens} leaves no room for the dialogue in the model's ${info.contextLength}-token window`,
    );
  const version = await registerVersion(prisma, {
    name: r.name,
    algorithm: 'external',
    kind: 'gguf',
    checkpointPath: resolved.file,
    checkpointSha256: info.sha256,
    serving: serving as Prisma.InputJsonObject,
    ...(r.audit
      ? {
          audit: {
            ...r.audit,
            detail: { ...r.audit.detail, file: resolved.file, sha256: info.sha256, quantization: info.quantization },
          },
        }
      : {}),
  });
  return { version, downloaded: resolved.downloaded };
}
