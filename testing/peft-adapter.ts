// A LoRA adapter directory written the way PEFT's save_pretrained writes one, for tests: adapter_config.json with
// PEFT's keys, and adapter_model.safetensors (F16, metadata {"format": "pt"}) holding, for every layer and target
// module, base_model.model.model.layers.<i>.<block>.<module>.lora_A.weight [r, in] and .lora_B.weight [out, r] of
// a Llama-shaped model. Options break it in the ways a person's adapter can be broken.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeSafetensors, type NamedTensor } from '../trainer/model/safetensors.ts';

export interface PeftAdapterOptions {
  baseModel: string;
  rank: number;
  targetModules?: string[];
  layers?: number;
  hidden?: number;
  intermediate?: number;
  /** Target modules whose tensors are left out (the config still names them). */
  omitModules?: string[];
  /** The rank the tensors really have (default: rank). */
  tensorRank?: number;
  /** Leave a file out. */
  without?: 'adapter_config.json' | 'adapter_model.safetensors';
}

const MLP = new Set(['gate_proj', 'up_proj', 'down_proj']);

export async function writePeftAdapter(dir: string, o: PeftAdapterOptions): Promise<string> {
  const targets = o.targetModules ?? ['q_proj', 'v_proj'];
  const layers = o.layers ?? 2;
  const hidden = o.hidden ?? 64;
  const intermediate = o.intermediate ?? 128;
  const r = o.tensorRank ?? o.rank;
  await mkdir(dir, { recursive: true });
  const config = {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: o.baseModel,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layers_pattern: null,
    layers_to_transform: null,
    lora_alpha: 2 * o.rank,
    lora_dropout: 0.05,
    modules_to_save: null,
    peft_type: 'LORA',
    r: o.rank,
    rank_pattern: {},
    revision: null,
    target_modules: targets,
    task_type: 'CAUSAL_LM',
    use_dora: false,
    use_rslora: false,
  };
  if (o.without !== 'adapter_config.json')
    await writeFile(join(dir, 'adapter_config.json'), JSON.stringify(config, null, 2));
  const tensors = new Map<string, NamedTensor>();
  let seed = 1;
  const fill = (shape: number[]): NamedTensor => {
    const data = new Float32Array(shape[0]! * shape[1]!);
    for (let i = 0; i < data.length; i++) data[i] = (((seed = (seed * 1103515245 + 12345) >>> 0) % 2000) - 1000) / 1e5;
    return { shape, data };
  };
  for (let l = 0; l < layers; l++) {
    for (const m of targets) {
      if (o.omitModules?.includes(m)) continue;
      const inF = m === 'down_proj' ? intermediate : hidden;
      const outF = m === 'gate_proj' || m === 'up_proj' ? intermediate : hidden;
      const prefix = `base_model.model.model.layers.${l}.${MLP.has(m) ? 'mlp' : 'self_attn'}.${m}`;
      tensors.set(`${prefix}.lora_A.weight`, fill([r, inF]));
      tensors.set(`${prefix}.lora_B.weight`, fill([outF, r]));
    }
  }
  if (o.without !== 'adapter_model.safetensors')
    await writeSafetensors(join(dir, 'adapter_model.safetensors'), tensors, {
      dtype: 'F16',
      metadata: { format: 'pt' },
    });
  return dir;
}
