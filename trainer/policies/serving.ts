// The `serving` JSON of endpoint and adapter versions (prisma/schema.prisma PolicyVersion.serving), validated on
// the way in and on the way out, so a hand-edited row fails with a message, not a crash mid-session; and the
// one-line "where is it served" of any version.
import { z } from 'zod';
import type { PolicyVersion } from '../../prisma/generated/client.ts';

/** Sampling defaults of an endpoint version (a collaborator-facing agent should not ramble). */
export const SERVING_DEFAULTS = { temperature: 0.7, topP: 0.95, maxTokens: 1024 } as const;

export const servingSchema = z.object({
  url: z.string().url('expected an http(s) URL such as http://127.0.0.1:8000/v1'),
  model: z.string().min(1),
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected the NAME of an environment variable (e.g. VLLM_API_KEY), not the key itself')
    .nullish(),
  contextWindow: z.number().int().min(256),
  temperature: z.number().min(0).max(2),
  topP: z.number().gt(0).max(1),
  maxTokens: z.number().int().min(1),
  /** The Hugging Face directory of the served model: its tokenizer counts prompt tokens exactly; LoRA base. */
  baseModelDir: z.string().min(1).nullish(),
  /** Adapter versions: the endpoint version whose server serves them, and the name they are loaded under. */
  endpointVersionId: z.string().uuid().nullish(),
  adapterName: z.string().min(1).nullish(),
});

export type Serving = z.infer<typeof servingSchema>;

/** A version's serving settings, checked; for 'adapter' versions also the adapter's name and endpoint. */
export function servingOf(v: Pick<PolicyVersion, 'name' | 'kind' | 'serving'>): Serving {
  if (v.kind !== 'endpoint' && v.kind !== 'adapter') throw new Error(`policy version "${v.name}" is a ${v.kind}, not served by an endpoint`);
  const parsed = servingSchema.safeParse(v.serving);
  if (!parsed.success) {
    throw new Error(`policy version "${v.name}" has unusable serving settings: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'serving'}: ${i.message}`).join('; ')}`);
  }
  if (v.kind === 'adapter' && (!parsed.data.adapterName || !parsed.data.endpointVersionId)) {
    throw new Error(`adapter version "${v.name}" does not say which adapter name and endpoint version it uses (serving.adapterName, serving.endpointVersionId)`);
  }
  return parsed.data;
}

/** Where a version is served, in one line (`sweetloop policy list`, logs). */
export function servedAt(v: Pick<PolicyVersion, 'name' | 'kind' | 'serving' | 'checkpointPath'>): string {
  if (v.kind === 'checkpoint') return v.checkpointPath ?? '(no checkpoint)';
  try {
    const s = servingOf(v);
    return `${s.url} ${s.model}${v.kind === 'adapter' ? ` + adapter ${s.adapterName} (${v.checkpointPath ?? 'no directory'})` : ''}`;
  } catch (err) {
    return `(invalid: ${(err as Error).message})`;
  }
}

/**
 * What a training run starting from `v` trains: a checkpoint's own weights, or, for a version served by an
 * endpoint, the served model's local directory (`baseModelDir`): the run then trains and publishes a LoRA adapter
 * for that server (`servedBy`: the serving settings it inherits and the endpoint version that loads it).
 */
export function trainingBaseOf(v: PolicyVersion): { dir: string; servedBy?: Serving & { endpointVersionId: string } } {
  if (v.kind === 'checkpoint') {
    if (!v.checkpointPath) throw new Error(`policy version "${v.name}" has no checkpoint`);
    return { dir: v.checkpointPath };
  }
  const s = servingOf(v);
  if (!s.baseModelDir) {
    throw new Error(`policy version "${v.name}" is served by ${s.url} without a local base model: register it with --base-model-dir to train adapters on it`);
  }
  return { dir: s.baseModelDir, servedBy: { ...s, endpointVersionId: v.kind === 'adapter' ? s.endpointVersionId! : v.id } };
}
