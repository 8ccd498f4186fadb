// The `serving` JSON of endpoint and adapter versions (prisma/schema.prisma PolicyVersion.serving), validated on
// the way in and on the way out, so a hand-edited row fails with a message, not a crash mid-session; and the
// one-line "where is it served" of any version. An endpoint version holds the server's address and settings; an
// adapter version holds only which endpoint version serves it and its name there (adapterRef), so moving the
// server (`sweetloop policy update NAME --endpoint URL`) moves its adapters too: resolveServing joins the two.
import { z } from 'zod';
import type { PolicyVersion, PrismaClient } from '../../prisma/generated/client.ts';
import { adapterNameFor } from './vllm-adapters.ts';

/** Sampling defaults of an endpoint version (a collaborator-facing agent should not ramble). */
export const SERVING_DEFAULTS = { temperature: 0.7, topP: 0.95, maxTokens: 1024 } as const;

export const servingSchema = z.object({
  url: z.string().url('expected an http(s) URL such as http://127.0.0.1:8000/v1'),
  model: z.string().min(1),
  apiKeyEnv: z
    .string()
    .regex(
      /^[A-Za-z_][A-Za-z0-9_]*$/,
      'expected the NAME of an environment variable (e.g. VLLM_API_KEY), not the key itself',
    )
    .nullish(),
  contextWindow: z.number().int().min(256),
  temperature: z.number().min(0).max(2),
  topP: z.number().gt(0).max(1),
  maxTokens: z.number().int().min(1),
  /** The Hugging Face directory of the served model: its tokenizer counts prompt tokens exactly; LoRA base. */
  baseModelDir: z.string().min(1).nullish(),
  /** The server's largest LoRA rank (vLLM's --max-lora-rank); unset: the VLLM_MAX_LORA_RANK setting. */
  maxLoraRank: z.number().int().positive().nullish(),
  /**
   * Requests this process keeps in flight to the server at once (the rest wait their turn in the bot): what the
   * server batches (vLLM's --max-num-seqs, 256 by default); unset: tasks/chat-endpoint.ts endpointLimiter's default, 16.
   */
  maxInFlight: z.number().int().positive().nullish(),
  /**
   * Store each agent turn's exact token ids and log-probabilities (prisma/schema.prisma TurnTokens). Off by default:
   * the server then returns every token's log-probability, which costs it time (bench:serve). vLLM returns ids
   * with `return_tokens_as_token_ids`; a server that ignores it leaves the turn marked 'unavailable'.
   */
  recordTokens: z.boolean().nullish(),
  /** The served weights' revision (e.g. the Hugging Face commit vLLM was started with): recorded with the tokens. */
  revision: z.string().min(1).nullish(),
  /** Resolved adapter versions (resolveServing): the endpoint version whose server serves them, their name there. */
  endpointVersionId: z.string().uuid().nullish(),
  adapterName: z.string().min(1).nullish(),
});

export type Serving = z.infer<typeof servingSchema>;

/** What an adapter version stores: the endpoint version that serves it and the name it is loaded under there. */
export const adapterRefSchema = z.object({ endpointVersionId: z.string().uuid(), adapterName: z.string().min(1) });
export type AdapterRef = z.infer<typeof adapterRefSchema>;

/** The serving JSON of a new adapter version on `endpointVersionId` (its server name is versioned: adapterNameFor). */
export function adapterServing(endpointVersionId: string): (v: { id: string; name: string }) => AdapterRef {
  return (v) => ({ endpointVersionId, adapterName: adapterNameFor(v) });
}

/** An adapter version's reference to its endpoint version, checked. */
export function adapterRefOf(v: Pick<PolicyVersion, 'name' | 'kind' | 'serving'>): AdapterRef {
  const parsed = adapterRefSchema.safeParse(v.serving);
  if (v.kind !== 'adapter' || !parsed.success) {
    throw new Error(
      `adapter version "${v.name}" does not say which adapter name and endpoint version it uses (serving.adapterName, serving.endpointVersionId)`,
    );
  }
  return parsed.data;
}

/** An endpoint version's serving settings, checked (an adapter's: resolveServing, which reads its endpoint's). */
export function servingOf(v: Pick<PolicyVersion, 'name' | 'kind' | 'serving'>): Serving {
  if (v.kind === 'adapter')
    throw new Error(
      `policy version "${v.name}" is an adapter: its serving settings are its endpoint version's (resolveServing)`,
    );
  if (v.kind !== 'endpoint') throw new Error(`policy version "${v.name}" is a ${v.kind}, not served by an endpoint`);
  const parsed = servingSchema.safeParse(v.serving);
  if (!parsed.success) {
    throw new Error(
      `policy version "${v.name}" has unusable serving settings: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'serving'}: ${i.message}`).join('; ')}`,
    );
  }
  return parsed.data;
}

/** The endpoint version an adapter version refers to; an Error naming both when it is gone or not an endpoint. */
export async function endpointOfAdapter(
  prisma: PrismaClient,
  v: Pick<PolicyVersion, 'name' | 'kind' | 'serving'>,
): Promise<PolicyVersion> {
  const ref = adapterRefOf(v);
  const e = await prisma.policyVersion.findUnique({ where: { id: ref.endpointVersionId } });
  if (!e) throw new Error(`adapter version "${v.name}": its endpoint version ${ref.endpointVersionId} does not exist`);
  if (e.kind !== 'endpoint')
    throw new Error(`adapter version "${v.name}": its base "${e.name}" is a ${e.kind} version, not an endpoint`);
  return e;
}

/**
 * The serving settings of an endpoint or adapter version: an adapter's are those of its endpoint version (read
 * now, so they follow an update of the endpoint) with its endpoint version id and adapter name.
 */
export async function resolveServing(
  prisma: PrismaClient,
  v: Pick<PolicyVersion, 'name' | 'kind' | 'serving'>,
): Promise<Serving> {
  if (v.kind !== 'adapter') return servingOf(v);
  const ref = adapterRefOf(v);
  return { ...servingOf(await endpointOfAdapter(prisma, v)), ...ref };
}

/**
 * Where a version is served, in one line (`sweetloop policy list`, logs). `versions`: the rows by id, where an
 * adapter version finds its endpoint version.
 */
export function servedAt(
  v: Pick<PolicyVersion, 'name' | 'kind' | 'serving' | 'checkpointPath'>,
  versions: ReadonlyMap<string, PolicyVersion> = new Map(),
): string {
  if (v.kind === 'checkpoint') return v.checkpointPath ?? '(no checkpoint)';
  if (v.kind === 'gguf') {
    const q = (v.serving as { quantization?: unknown } | null)?.quantization;
    return `${v.checkpointPath ?? '(no file)'} (GGUF${typeof q === 'string' ? ` ${q}` : ''}, llama.cpp)`;
  }
  try {
    if (v.kind === 'endpoint') {
      const s = servingOf(v);
      return `${s.url} ${s.model}`;
    }
    const ref = adapterRefOf(v);
    const e = versions.get(ref.endpointVersionId);
    const on = e?.kind === 'endpoint' ? `${e.name} (${servedAt(e)})` : `endpoint version ${ref.endpointVersionId}`;
    return `on ${on} + adapter ${ref.adapterName} (${v.checkpointPath ?? 'no directory'})`;
  } catch (err) {
    return `(invalid: ${(err as Error).message})`;
  }
}

/**
 * Whether the bot stores each agent turn's exact tokens for this version (`sweetloop policy list`): an endpoint's
 * serving.recordTokens, an adapter's endpoint's; never for Sweetloop's own engines, which the bot asks for no
 * logprobs (bot/runtime.ts defaultLoadAgent) and whose tokens the trainer recomputes from the text.
 */
export function recordsTokens(
  v: Pick<PolicyVersion, 'name' | 'kind' | 'serving'>,
  versions: ReadonlyMap<string, PolicyVersion> = new Map(),
): boolean {
  try {
    if (v.kind === 'endpoint') return servingOf(v).recordTokens === true;
    if (v.kind !== 'adapter') return false;
    const e = versions.get(adapterRefOf(v).endpointVersionId);
    return e?.kind === 'endpoint' && servingOf(e).recordTokens === true;
  } catch {
    return false;
  }
}

/** Why a gguf version without a Hugging Face directory cannot be trained from (one sentence, for the trainer). */
export function ggufNeedsBaseModelDir(name: string): string {
  return `policy version "${name}" is a GGUF file (quantized weights for inference only): training from it needs the same model's Hugging Face directory; register it with --base-model-dir DIR (sweetloop policy add NAME --gguf FILE --base-model-dir DIR)`;
}
