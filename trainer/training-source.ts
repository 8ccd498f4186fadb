// What a training run starts from, decided once for `sweetloop train` and the trainer service alike. From the
// version asked for (the deployed one, for the service) and its ancestors (parentId), and facts read about them
// (trainingSourceFacts below: its checkpoint, its server's local base model, its adapter's config), the pure
// `chooseStart` and `decideTrainingSource` say what the run trains on:
// - an own checkpoint: its weights (full fine-tuning, or LoRA merged when asked);
// - an endpoint version with a local base (--base-model-dir): a fresh LoRA adapter of the requested rank on that
//   base, published as an adapter on the endpoint; the rank must fit the server's --max-lora-rank;
// - an adapter version on such an endpoint: the same base, continuing from the adapter (its rank, alpha and
//   targets), or a fresh adapter, saying why, when the adapter cannot be continued here;
// - an endpoint without a local base, a missing checkpoint, a rank the server refuses: it cannot train, and the
//   reason says what to do.
// Erased data: a version marked metrics.trainedOnErasedData (prisma/privacy-store.ts), or one descending from
// such a version, carries the erased sessions in its weights. A person who names it (`train --from`) is refused,
// with the nearest clean ancestor named; the service, which only ever trains from "deployed", starts from that
// ancestor instead and says so (or cannot train when there is none). It never trains on top of erased data.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { PolicyVersion, PrismaClient } from '../prisma/generated/client.ts';
import { trainedOnErasedData } from '../prisma/policy-store.ts';
import { ADAPTER_CONFIG } from './model/lora.ts';
import { DEFAULT_LORA_TARGETS, isLinearModule, type LinearModule } from './model/lora-modules.ts';
import { checkAdapterDir } from './policies/adapter-check.ts';
import { ggufNeedsBaseModelDir, resolveServing } from './policies/serving.ts';

export interface LoraSpec {
  rank: number;
  alpha: number;
  targetModules: LinearModule[];
}

/** One version of a lineage, as chooseStart reads it. */
export interface LineageEntry {
  name: string;
  status: string;
  /** metrics.trainedOnErasedData. */
  erased: boolean;
}

/** What is known about the version a run would start from. */
export interface SourceFacts {
  id: string;
  name: string;
  kind: 'checkpoint' | 'gguf' | 'endpoint' | 'adapter';
  /** kind checkpoint: its directory and whether it holds a model (config.json); kind gguf: its --base-model-dir. */
  checkpoint?: { dir: string | null; exists: boolean };
  /** kind endpoint or adapter: its server, or why its serving settings cannot be read. */
  served?:
    | {
        endpointVersionId: string;
        endpointName: string;
        url: string;
        model: string;
        baseModelDir: string | null;
        maxLoraRank: number;
      }
    | { error: string };
  /** kind adapter: its directory and config, or why it cannot be continued from. */
  adapter?:
    | { dir: string; rank: number; alpha: number; targetModules: string[] | string }
    | { dir: string | null; error: string };
}

export type TrainingSource =
  | {
      ok: true;
      /** The version the run starts from (its parent). */
      fromId: string;
      fromName: string;
      /** The weights the run loads: a checkpoint, or a served model's local base directory. */
      baseDir: string;
      /** Set when the run trains an adapter for an endpoint version (published as "adapter on endpoint"). */
      endpointVersionId?: string;
      /** LoRA settings of the run; null: full fine-tuning. */
      lora: LoraSpec | null;
      /** The adapter directory the run continues from (its adapters are loaded, not freshly added). */
      continueAdapter?: string;
      /** What the run does, in one line a person reads. */
      summary: string;
    }
  | { ok: false; reason: string };

/**
 * Which version of `lineage` (the version asked for first, then its parent, its parent's parent...) a run may start
 * from: the first, unless it or an ancestor was trained on erased data. Then `refuse` (a person named it) says so
 * and names the nearest clean ancestor; `ancestor` (the service) starts from that ancestor, with a note why.
 */
export function chooseStart(
  lineage: readonly LineageEntry[],
  onErased: 'refuse' | 'ancestor',
): { index: number; note?: string } | { reason: string } {
  const asked = lineage[0];
  if (!asked)
    return {
      reason:
        'no policy version is deployed yet (the bot deploys the starter at its first start; or sweetloop deploy NAME)',
    };
  let oldest = -1;
  lineage.forEach((v, i) => v.erased && (oldest = i));
  if (oldest < 0) return { index: 0 };
  const marked = lineage[oldest]!;
  const why =
    oldest === 0
      ? `"${asked.name}" was trained on sessions since erased (/privacy delete marked it)`
      : `"${asked.name}" descends from "${marked.name}", which was trained on sessions since erased (/privacy delete marked it)`;
  const clean = lineage[oldest + 1];
  if (!clean)
    return {
      reason: `${why}, and no version before it is free of them: deploy a clean version (or train --from starter)`,
    };
  if (clean.status === 'removed')
    return {
      reason: `${why}; the version before it, "${clean.name}", was removed: deploy a clean version (or train --from starter)`,
    };
  if (onErased === 'refuse')
    return {
      reason: `${why}: a run from it would carry that data into the new version. Start from "${clean.name}", the nearest version before it (sweetloop train --from ${clean.name})`,
    };
  return { index: oldest + 1, note: `${why}: training from "${clean.name}", the nearest version before it, instead` };
}

export interface DecideOptions {
  /** LoRA asked for (flags, or the preset's); null: full fine-tuning of a checkpoint. */
  lora: LoraSpec | null;
  /** The person gave LoRA settings explicitly: continuing an adapter with other settings is refused, not ignored. */
  loraExplicit: boolean;
  /** Prepended to the summary (chooseStart's note). */
  note?: string;
}

function describeLora(l: LoraSpec): string {
  return `LoRA rank ${l.rank} (alpha ${l.alpha}; ${l.targetModules.join(', ')})`;
}

function sameLora(a: LoraSpec, b: LoraSpec): boolean {
  return a.rank === b.rank && a.alpha === b.alpha && a.targetModules.join() === b.targetModules.join();
}

/** What a run starting from `f` trains on, or why it cannot train. Pure. */
export function decideTrainingSource(f: SourceFacts, o: DecideOptions): TrainingSource {
  const say = (s: string) => (o.note ? `${o.note}; ${s}` : s);
  const fail = (reason: string): TrainingSource => ({
    ok: false,
    reason: o.note ? `${o.note}, but ${reason}` : reason,
  });
  if (f.kind === 'gguf' && !f.checkpoint?.dir) return fail(ggufNeedsBaseModelDir(f.name));
  if (f.kind === 'checkpoint' || f.kind === 'gguf') {
    if (!f.checkpoint?.dir || !f.checkpoint.exists)
      return fail(`the checkpoint of "${f.name}" (${f.checkpoint?.dir ?? 'no directory'}) is missing`);
    return {
      ok: true,
      fromId: f.id,
      fromName: f.name,
      baseDir: f.checkpoint.dir,
      lora: o.lora,
      summary: say(
        `from "${f.name}": ${o.lora ? `${describeLora(o.lora)}, merged when published` : 'all parameters'} on ${f.checkpoint.dir}`,
      ),
    };
  }
  if (!f.served || 'error' in f.served)
    return fail(`"${f.name}" cannot be trained on: ${f.served ? f.served.error : 'its serving settings are missing'}`);
  const s = f.served;
  if (!s.baseModelDir) {
    return fail(
      `"${f.name}" is served by ${s.url} (model ${s.model}) without a local copy of its base model, so there are no weights here to train LoRA adapters on. ` +
        `Record the served model's Hugging Face directory on its endpoint version (sweetloop policy update ${s.endpointVersionId ? 'ENDPOINT_VERSION' : f.name} --base-model-dir DIR)`,
    );
  }
  const onEndpoint = {
    fromId: f.id,
    fromName: f.name,
    baseDir: s.baseModelDir,
    endpointVersionId: s.endpointVersionId,
  };
  const fitsServer = (l: LoraSpec): string | null =>
    l.rank > s.maxLoraRank
      ? `LoRA rank ${l.rank} is above the largest rank the server of "${s.endpointName}" loads (${s.maxLoraRank}; vLLM --max-lora-rank). Lower the rank (TRAINER_LORA_RANK, --lora), or start vLLM with a larger --max-lora-rank and record it (sweetloop policy update ${s.endpointName} --max-lora-rank N)`
      : null;
  let freshBecause = `"${f.name}" is the base model itself, with no adapter deployed on it`;
  if (f.kind === 'adapter') {
    const a = f.adapter;
    const unsupported =
      a && !('error' in a)
        ? Array.isArray(a.targetModules)
          ? a.targetModules.filter((t) => !isLinearModule(t))
          : [String(a.targetModules)]
        : [];
    if (!a || 'error' in a)
      freshBecause = `the adapter of "${f.name}" cannot be continued (${a ? a.error : 'no adapter directory'})`;
    else if (unsupported.length)
      freshBecause = `the adapter of "${f.name}" targets ${unsupported.join(', ')}, which this trainer cannot train (it adapts ${DEFAULT_LORA_TARGETS.join(', ')}, gate_proj, up_proj, down_proj)`;
    else {
      const kept: LoraSpec = { rank: a.rank, alpha: a.alpha, targetModules: a.targetModules as LinearModule[] };
      if (o.loraExplicit && o.lora && !sameLora(o.lora, kept)) {
        return fail(
          `"${f.name}" is an adapter with ${describeLora(kept)}; a run from it continues that adapter, so ${describeLora(o.lora)} does not apply. Leave out the LoRA options, or train a fresh adapter --from ${s.endpointName}`,
        );
      }
      const tooBig = fitsServer(kept);
      if (tooBig) return fail(tooBig);
      return {
        ok: true,
        ...onEndpoint,
        lora: kept,
        continueAdapter: a.dir,
        summary: say(
          `from "${f.name}": continuing its adapter, ${describeLora(kept)}, on the base model ${s.baseModelDir} of "${s.endpointName}"`,
        ),
      };
    }
  }
  if (!o.lora)
    return fail(
      `"${f.name}" is served by an endpoint: train a LoRA adapter for it (--lora RANK, or a preset with LoRA such as paper-lora)`,
    );
  const tooBig = fitsServer(o.lora);
  if (tooBig) return fail(tooBig);
  return {
    ok: true,
    ...onEndpoint,
    lora: o.lora,
    summary: say(
      `from "${f.name}": a fresh adapter, ${describeLora(o.lora)}, on the base model ${s.baseModelDir} of "${s.endpointName}" (${freshBecause})`,
    ),
  };
}

/** The version and its ancestors by parentId, nearest first (stops at a missing parent or a loop). */
export async function lineageOf(prisma: PrismaClient, v: PolicyVersion): Promise<PolicyVersion[]> {
  const out = [v];
  const seen = new Set([v.id]);
  for (let p = v.parentId; p && !seen.has(p); ) {
    const parent = await prisma.policyVersion.findUnique({ where: { id: p } });
    if (!parent) break;
    out.push(parent);
    seen.add(parent.id);
    p = parent.parentId;
  }
  return out;
}

/** Reads what decideTrainingSource needs about `v`: its checkpoint, its server, its adapter's config. */
export async function trainingSourceFacts(
  prisma: PrismaClient,
  v: PolicyVersion,
  defaultMaxLoraRank: number,
): Promise<SourceFacts> {
  const kind = v.kind as SourceFacts['kind'];
  if (kind === 'checkpoint')
    return {
      id: v.id,
      name: v.name,
      kind,
      checkpoint: {
        dir: v.checkpointPath,
        exists: !!v.checkpointPath && existsSync(join(v.checkpointPath, 'config.json')),
      },
    };
  if (kind === 'gguf') {
    // A GGUF file holds quantized inference weights only: training starts from the same model's Hugging Face directory.
    const dir = (v.serving as { baseModelDir?: unknown } | null)?.baseModelDir;
    return {
      id: v.id,
      name: v.name,
      kind,
      checkpoint: {
        dir: typeof dir === 'string' ? dir : null,
        exists: typeof dir === 'string' && existsSync(join(dir, 'config.json')),
      },
    };
  }
  let served: SourceFacts['served'];
  try {
    const s = await resolveServing(prisma, v);
    const endpointVersionId = kind === 'adapter' ? s.endpointVersionId! : v.id;
    const endpoint =
      kind === 'adapter'
        ? await prisma.policyVersion.findUnique({ where: { id: endpointVersionId }, select: { name: true } })
        : v;
    served = {
      endpointVersionId,
      endpointName: endpoint?.name ?? endpointVersionId,
      url: s.url,
      model: s.model,
      baseModelDir: s.baseModelDir ?? null,
      maxLoraRank: s.maxLoraRank ?? defaultMaxLoraRank,
    };
  } catch (err) {
    served = { error: (err as Error).message };
  }
  if (kind !== 'adapter') return { id: v.id, name: v.name, kind, served };
  let adapter: SourceFacts['adapter'];
  if (!v.checkpointPath || !existsSync(join(v.checkpointPath, ADAPTER_CONFIG)))
    adapter = { dir: v.checkpointPath, error: `${v.checkpointPath ?? 'its directory'} has no ${ADAPTER_CONFIG}` };
  else if ('error' in served) adapter = { dir: v.checkpointPath, error: served.error };
  else {
    try {
      // The same check an adapter made elsewhere gets (policy add --adapter), with the rank left to decideTrainingSource.
      const c = await checkAdapterDir(v.checkpointPath, {
        baseNames: [served.model, ...(served.baseModelDir ? [served.baseModelDir] : [])],
        maxRank: Number.MAX_SAFE_INTEGER,
        endpointName: served.endpointName,
      });
      adapter =
        c.alpha === null
          ? { dir: v.checkpointPath, error: 'its config has no lora_alpha' }
          : { dir: v.checkpointPath, rank: c.rank, alpha: c.alpha, targetModules: c.targetModules };
    } catch (err) {
      adapter = { dir: v.checkpointPath, error: (err as Error).message };
    }
  }
  return { id: v.id, name: v.name, kind, served, adapter };
}

/**
 * The whole decision for a version: its lineage, the start chooseStart picks, the facts about that start, and
 * decideTrainingSource. `version` null: nothing is deployed.
 */
export async function trainingSource(
  prisma: PrismaClient,
  version: PolicyVersion | null,
  o: { onErased: 'refuse' | 'ancestor'; lora: LoraSpec | null; loraExplicit: boolean; defaultMaxLoraRank: number },
): Promise<TrainingSource> {
  const lineage = version ? await lineageOf(prisma, version) : [];
  const start = chooseStart(
    lineage.map((v) => ({ name: v.name, status: v.status, erased: trainedOnErasedData(v) })),
    o.onErased,
  );
  if ('reason' in start) return { ok: false, reason: start.reason };
  const facts = await trainingSourceFacts(prisma, lineage[start.index]!, o.defaultMaxLoraRank);
  return decideTrainingSource(facts, {
    lora: o.lora,
    loraExplicit: o.loraExplicit,
    ...(start.note ? { note: start.note } : {}),
  });
}
