// checkAdapterDir on adapter directories written as PEFT writes them (testing/peft-adapter.ts, real
// safetensors files): a good one passes with its rank and modules; each fault is refused with a message naming it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writePeftAdapter, type PeftAdapterOptions } from '../../../testing/peft-adapter.ts';
import { AdapterCheckError, checkAdapterDir } from '../../../trainer/policies/adapter-check.ts';

const BASE = 'meta-llama/Llama-3.1-8B-Instruct';
const expectations = { baseNames: [BASE], maxRank: 16, endpointName: 'llama-8b' };
let root: string;
let n = 0;

const adapter = (o: Partial<PeftAdapterOptions> = {}) =>
  writePeftAdapter(join(root, `a${++n}`), { baseModel: BASE, rank: 8, ...o });

async function refusal(dir: string, e = expectations): Promise<string> {
  const err = await checkAdapterDir(dir, e).then(
    () => null,
    (x: unknown) => x,
  );
  expect(err).toBeInstanceOf(AdapterCheckError);
  return (err as Error).message;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'adapter-check-'));
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe('checkAdapterDir', () => {
  it("accepts a PEFT adapter of the served base, within the server's rank, with every target module's tensors", async () => {
    const dir = await adapter({
      targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
      layers: 3,
    });
    expect(await checkAdapterDir(dir, expectations)).toEqual({
      baseModel: BASE,
      rank: 8,
      alpha: 16,
      targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
      modules: 21,
    });
    // The rank may equal the server's maximum.
    expect((await checkAdapterDir(await adapter({ rank: 16 }), expectations)).rank).toBe(16);
  });

  it('takes a local copy of the base (same last path segment) as the same base', async () => {
    const dir = await adapter({ baseModel: '/models/Llama-3.1-8B-Instruct/' });
    expect((await checkAdapterDir(dir, expectations)).baseModel).toBe('/models/Llama-3.1-8B-Instruct/');
    const served = await adapter({ baseModel: '/data/hf/qwen2.5-7b' });
    expect(
      (await checkAdapterDir(served, { ...expectations, baseNames: ['qwen', '/srv/models/Qwen2.5-7B'] })).rank,
    ).toBe(8);
  });

  it('refuses a wrong base, naming both', async () => {
    expect(await refusal(await adapter({ baseModel: 'Qwen/Qwen2.5-7B-Instruct' }))).toBe(
      'wrong base: the adapter was trained on "Qwen/Qwen2.5-7B-Instruct", but "llama-8b" serves "meta-llama/Llama-3.1-8B-Instruct"',
    );
  });

  it("refuses a rank above the server's maximum", async () => {
    expect(await refusal(await adapter({ rank: 32 }))).toMatch(
      /^rank too high: the adapter's rank is 32, above the server's maximum LoRA rank 16 \(vLLM --max-lora-rank/,
    );
    expect(await refusal(await adapter({ rank: 8 }), { ...expectations, maxRank: 4 })).toMatch(
      /^rank too high: the adapter's rank is 8, above the server's maximum LoRA rank 4/,
    );
  });

  it('refuses missing tensors: a target module without weights, no weights file, no LoRA tensors at all', async () => {
    expect(
      await refusal(await adapter({ targetModules: ['q_proj', 'k_proj', 'v_proj'], omitModules: ['k_proj'] })),
    ).toBe('missing tensors: no lora_A/lora_B weights for target module(s) k_proj in adapter_model.safetensors');
    expect(await refusal(await adapter({ without: 'adapter_model.safetensors' }))).toMatch(
      /^missing tensors: .* has no adapter_model\.safetensors$/,
    );
    expect(await refusal(await adapter({ layers: 0 }))).toBe(
      'missing tensors: adapter_model.safetensors holds no lora_A/lora_B weights (0 other tensor(s))',
    );
  });

  it('refuses a missing adapter_config.json, and a config that is not LoRA', async () => {
    expect(await refusal(await adapter({ without: 'adapter_config.json' }))).toMatch(
      /^missing adapter_config\.json: .* has no adapter_config\.json/,
    );
    const dir = await adapter();
    const cfg = JSON.parse(await readFile(join(dir, 'adapter_config.json'), 'utf8'));
    await writeFile(join(dir, 'adapter_config.json'), JSON.stringify({ ...cfg, peft_type: 'PROMPT_TUNING' }));
    expect(await refusal(dir)).toBe(
      'not a LoRA adapter: adapter_config.json has peft_type "PROMPT_TUNING", expected "LORA"',
    );
    await writeFile(join(dir, 'adapter_config.json'), JSON.stringify({ ...cfg, base_model_name_or_path: null }));
    expect(await refusal(dir)).toMatch(/does not name its base model \(base_model_name_or_path\)/);
    expect(await refusal(join(root, 'no-such-dir'))).toMatch(/is not a directory/);
  });

  it('refuses tensors whose shapes do not match the rank, and modules the config does not target', async () => {
    expect(await refusal(await adapter({ rank: 8, tensorRank: 4 }))).toBe(
      'wrong shape: model.layers.0.self_attn.q_proj.lora_A is [4, 64], expected [8, in_features] for rank 8',
    );
    const dir = await adapter({ targetModules: ['q_proj', 'v_proj'] });
    const cfg = JSON.parse(await readFile(join(dir, 'adapter_config.json'), 'utf8'));
    await writeFile(join(dir, 'adapter_config.json'), JSON.stringify({ ...cfg, target_modules: ['q_proj'] }));
    expect(await refusal(dir)).toBe(
      'adapter_model.safetensors adapts model.layers.0.self_attn.v_proj, which target_modules (["q_proj"]) does not name',
    );
  });

  it('refuses a truncated weights file', async () => {
    const dir = await adapter();
    await truncate(join(dir, 'adapter_model.safetensors'), 100);
    expect(await refusal(dir)).toMatch(/^adapter_model\.safetensors is not a readable safetensors file: .*truncated/);
  });
});
