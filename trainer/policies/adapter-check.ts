// Checks a LoRA adapter directory made anywhere (PEFT, the trainer, another tool) before it becomes a version:
// adapter_config.json (peft_type LORA, base_model_name_or_path, r, target_modules, rank_pattern) against the base
// its endpoint version serves and the server's largest rank, and adapter_model.safetensors's header (read, never
// its weights) against the config: a lora_A [r, in] and a lora_B [out, r] for each adapted module, every target
// module adapted, nothing adapted that is not a target. Each refusal names the fault, so a person can fix it;
// the server would otherwise refuse the load only at deploy time, or worse, load weights it misreads.
import { readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { ADAPTER_CONFIG, ADAPTER_WEIGHTS } from '../model/lora.ts';
import { openSafetensors } from '../model/safetensors.ts';

/** An adapter directory that cannot be served on the endpoint asked for; the message names the fault. */
export class AdapterCheckError extends Error {
  override name = 'AdapterCheckError';
}

export interface AdapterExpectations {
  /** The names the endpoint's base model goes by: its served model name, its local directory (when recorded). */
  baseNames: string[];
  /** The server's largest LoRA rank. */
  maxRank: number;
  /** For messages: the endpoint version's name. */
  endpointName: string;
}

export interface CheckedAdapter {
  baseModel: string;
  rank: number;
  alpha: number | null;
  targetModules: string[] | string;
  /** Modules adapted (lora_A/lora_B pairs found). */
  modules: number;
}

interface PeftConfig {
  peft_type?: unknown;
  base_model_name_or_path?: unknown;
  r?: unknown;
  lora_alpha?: unknown;
  target_modules?: unknown;
  rank_pattern?: unknown;
}

const TENSOR = /^(.+)\.lora_(A|B)(?:\.[^.]+)?\.weight$/;

/** The last path segment, lower case, without trailing slashes: "meta-llama/Llama-3.1-8B/" → "llama-3.1-8b". */
function tail(name: string): string {
  return basename(name.replace(/[\\/]+$/, '')).toLowerCase();
}

/**
 * Whether the adapter's base is the served one: the same name, or the same last path segment (a Hub id such as
 * meta-llama/Llama-3.1-8B-Instruct and a local copy /models/Llama-3.1-8B-Instruct are the same base).
 */
function sameBase(base: string, names: string[]): boolean {
  return names.some((n) => n === base || tail(n) === tail(base));
}

/** Does a PEFT module key (a short name such as q_proj, or a dotted suffix) name `module`? PEFT matches suffixes. */
function keyMatches(key: string, module: string): boolean {
  return module === key || module.endsWith(`.${key}`);
}

export async function checkAdapterDir(dir: string, expect: AdapterExpectations): Promise<CheckedAdapter> {
  const isDir = await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isDir)
    throw new AdapterCheckError(
      `${dir} is not a directory: give the PEFT adapter directory (adapter_config.json + adapter_model.safetensors)`,
    );
  const cfgFile = join(dir, ADAPTER_CONFIG);
  let raw: string;
  try {
    raw = await readFile(cfgFile, 'utf8');
  } catch {
    throw new AdapterCheckError(
      `missing adapter_config.json: ${dir} has no ${ADAPTER_CONFIG}, so it is not a PEFT adapter directory`,
    );
  }
  let cfg: PeftConfig;
  try {
    cfg = JSON.parse(raw) as PeftConfig;
  } catch (err) {
    throw new AdapterCheckError(`${cfgFile} is not JSON: ${(err as Error).message}`);
  }
  if (!cfg || typeof cfg !== 'object' || Array.isArray(cfg))
    throw new AdapterCheckError(`${cfgFile} is not a JSON object`);
  if (cfg.peft_type !== 'LORA')
    throw new AdapterCheckError(
      `not a LoRA adapter: ${ADAPTER_CONFIG} has peft_type ${JSON.stringify(cfg.peft_type ?? null)}, expected "LORA"`,
    );

  // Base model.
  if (typeof cfg.base_model_name_or_path !== 'string' || !cfg.base_model_name_or_path) {
    throw new AdapterCheckError(
      `${ADAPTER_CONFIG} does not name its base model (base_model_name_or_path): cannot check it against "${expect.endpointName}", which serves ${expect.baseNames[0]}`,
    );
  }
  const baseModel = cfg.base_model_name_or_path;
  if (!sameBase(baseModel, expect.baseNames)) {
    throw new AdapterCheckError(
      `wrong base: the adapter was trained on "${baseModel}", but "${expect.endpointName}" serves ${expect.baseNames.map((n) => `"${n}"`).join(' / ')}`,
    );
  }

  // Rank.
  if (typeof cfg.r !== 'number' || !Number.isInteger(cfg.r) || cfg.r <= 0)
    throw new AdapterCheckError(
      `${ADAPTER_CONFIG}: r (the rank) must be a positive integer, got ${JSON.stringify(cfg.r ?? null)}`,
    );
  const rankPattern = new Map<string, number>();
  if (cfg.rank_pattern && typeof cfg.rank_pattern === 'object' && !Array.isArray(cfg.rank_pattern)) {
    for (const [k, v] of Object.entries(cfg.rank_pattern)) {
      if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0)
        throw new AdapterCheckError(
          `${ADAPTER_CONFIG}: rank_pattern["${k}"] must be a positive integer, got ${JSON.stringify(v)}`,
        );
      rankPattern.set(k, v);
    }
  }
  const highest = Math.max(cfg.r, ...rankPattern.values());
  if (highest > expect.maxRank) {
    throw new AdapterCheckError(
      `rank too high: the adapter's rank is ${highest}, above the server's maximum LoRA rank ${expect.maxRank} (vLLM --max-lora-rank; record a larger one with \`sweetloop policy update ${expect.endpointName} --max-lora-rank N\`)`,
    );
  }
  const rankOf = (module: string): number => {
    for (const [k, v] of rankPattern) if (keyMatches(k, module)) return v;
    return cfg.r as number;
  };

  // Target modules: a list of names, or (PEFT) one regular expression over module paths.
  const targets = cfg.target_modules;
  const isList = Array.isArray(targets) && targets.length > 0 && targets.every((x) => typeof x === 'string' && x);
  if (!isList && !(typeof targets === 'string' && targets))
    throw new AdapterCheckError(
      `${ADAPTER_CONFIG}: target_modules must be a non-empty list of module names (or a regular expression), got ${JSON.stringify(targets ?? null)}`,
    );
  let targetRegex: RegExp | null = null;
  if (!isList) {
    try {
      targetRegex = new RegExp(`^(?:${targets as string})$`);
    } catch (err) {
      throw new AdapterCheckError(
        `${ADAPTER_CONFIG}: target_modules "${targets as string}" is not a regular expression: ${(err as Error).message}`,
      );
    }
  }
  const isTarget = (module: string) =>
    targetRegex ? targetRegex.test(module) : (targets as string[]).some((t) => keyMatches(t, module));

  // Weights: names and shapes from the header alone.
  const weightsFile = join(dir, ADAPTER_WEIGHTS);
  if (
    !(await stat(weightsFile).then(
      (s) => s.isFile(),
      () => false,
    ))
  ) {
    throw new AdapterCheckError(`missing tensors: ${dir} has no ${ADAPTER_WEIGHTS}`);
  }
  let entries: Map<string, { shape: number[] }>;
  try {
    const f = await openSafetensors(weightsFile);
    entries = f.entries;
    await f.close();
  } catch (err) {
    throw new AdapterCheckError(`${ADAPTER_WEIGHTS} is not a readable safetensors file: ${(err as Error).message}`);
  }
  const pairs = new Map<string, { A?: number[]; B?: number[] }>();
  for (const [name, e] of entries) {
    const m = TENSOR.exec(name);
    if (!m) continue;
    const module = m[1]!.replace(/^base_model\.model\./, '');
    const p = pairs.get(module) ?? {};
    p[m[2] as 'A' | 'B'] = e.shape;
    pairs.set(module, p);
  }
  if (pairs.size === 0)
    throw new AdapterCheckError(
      `missing tensors: ${ADAPTER_WEIGHTS} holds no lora_A/lora_B weights (${entries.size} other tensor(s))`,
    );
  for (const [module, p] of pairs) {
    if (!p.A || !p.B)
      throw new AdapterCheckError(
        `missing tensors: ${module} has a lora_${p.A ? 'A' : 'B'} but no lora_${p.A ? 'B' : 'A'}`,
      );
    if (!isTarget(module))
      throw new AdapterCheckError(
        `${ADAPTER_WEIGHTS} adapts ${module}, which target_modules (${JSON.stringify(targets)}) does not name`,
      );
    const r = rankOf(module);
    if (p.A.length !== 2 || p.A[0] !== r || !(p.A[1]! > 0))
      throw new AdapterCheckError(
        `wrong shape: ${module}.lora_A is [${p.A.join(', ')}], expected [${r}, in_features] for rank ${r}`,
      );
    if (p.B.length !== 2 || p.B[1] !== r || !(p.B[0]! > 0))
      throw new AdapterCheckError(
        `wrong shape: ${module}.lora_B is [${p.B.join(', ')}], expected [out_features, ${r}] for rank ${r}`,
      );
  }
  if (isList) {
    const missing = (targets as string[]).filter((t) => ![...pairs.keys()].some((m) => keyMatches(t, m)));
    if (missing.length)
      throw new AdapterCheckError(
        `missing tensors: no lora_A/lora_B weights for target module(s) ${missing.join(', ')} in ${ADAPTER_WEIGHTS}`,
      );
  }
  return {
    baseModel,
    rank: highest,
    alpha: typeof cfg.lora_alpha === 'number' ? cfg.lora_alpha : null,
    targetModules: targets as string[] | string,
    modules: pairs.size,
  };
}
