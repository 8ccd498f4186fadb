import { describe, expect, it } from 'vitest';
import { parseHfConfig, parameterCount, toHfConfig } from '../../../trainer/model/architecture.ts';
import { parameterShapes, ropeInverseFrequencies } from '../../../trainer/model/decoder.ts';

// Shapes of public configs (values as published on the Hugging Face hub).
const llama32_1b = {
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  attention_bias: false,
  bos_token_id: 128000,
  eos_token_id: [128001, 128008, 128009],
  head_dim: 64,
  hidden_act: 'silu',
  hidden_size: 2048,
  intermediate_size: 8192,
  max_position_embeddings: 131072,
  mlp_bias: false,
  num_attention_heads: 32,
  num_hidden_layers: 16,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-5,
  rope_scaling: {
    factor: 32.0,
    high_freq_factor: 4.0,
    low_freq_factor: 1.0,
    original_max_position_embeddings: 8192,
    rope_type: 'llama3',
  },
  rope_theta: 500000.0,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  vocab_size: 128256,
};
const qwen25_05b = {
  architectures: ['Qwen2ForCausalLM'],
  model_type: 'qwen2',
  bos_token_id: 151643,
  eos_token_id: 151645,
  hidden_act: 'silu',
  hidden_size: 896,
  intermediate_size: 4864,
  max_position_embeddings: 32768,
  num_attention_heads: 14,
  num_hidden_layers: 24,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000.0,
  tie_word_embeddings: true,
  vocab_size: 151936,
};
const smollm2_135m = {
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  bos_token_id: 1,
  eos_token_id: 2,
  hidden_act: 'silu',
  hidden_size: 576,
  intermediate_size: 1536,
  max_position_embeddings: 8192,
  num_attention_heads: 9,
  num_hidden_layers: 30,
  num_key_value_heads: 3,
  rms_norm_eps: 1e-5,
  rope_scaling: null,
  rope_theta: 100000,
  tie_word_embeddings: true,
  vocab_size: 49152,
};

describe('Hugging Face config parsing', () => {
  it('reads a Llama 3.2 config with llama3 rope scaling and several eos ids', () => {
    const c = parseHfConfig(llama32_1b);
    expect(c).toMatchObject({
      modelType: 'llama',
      numKvHeads: 8,
      headDim: 64,
      tieWordEmbeddings: true,
      qkvBias: false,
      bosTokenId: 128000,
    });
    expect(c.eosTokenIds).toEqual([128001, 128008, 128009]);
    expect(c.ropeScaling).toEqual({
      type: 'llama3',
      factor: 32,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositionEmbeddings: 8192,
    });
    // Published size of Llama-3.2-1B: 1.236 billion parameters.
    expect(parameterCount(c)).toBe(1_235_814_400);
  });

  it('gives Qwen2 q/k/v biases and no o_proj bias', () => {
    const c = parseHfConfig(qwen25_05b);
    expect(c).toMatchObject({ modelType: 'qwen2', qkvBias: true, outputBias: false, headDim: 64, numKvHeads: 2 });
    const shapes = parameterShapes(c);
    expect(shapes.get('model.layers.0.self_attn.k_proj.bias')).toEqual([128]);
    expect(shapes.has('model.layers.0.self_attn.o_proj.bias')).toBe(false);
    expect(shapes.has('lm_head.weight')).toBe(false);
    expect(parameterCount(c)).toBe(494_032_768); // Qwen2.5-0.5B
  });

  it('reads SmolLM2 (llama layout, head_dim derived, no scaling)', () => {
    const c = parseHfConfig(smollm2_135m);
    expect(c).toMatchObject({ headDim: 64, ropeScaling: { type: 'none' }, eosTokenIds: [2] });
    expect(parameterCount(c)).toBe(134_515_008); // SmolLM2-135M
  });

  it('round-trips through toHfConfig', () => {
    for (const raw of [llama32_1b, qwen25_05b, smollm2_135m]) {
      const c = parseHfConfig(raw);
      expect(parseHfConfig(JSON.parse(JSON.stringify(toHfConfig(c))))).toEqual(c);
    }
  });

  it('refuses unknown architectures and unsupported features with a clear message', () => {
    expect(() => parseHfConfig({ ...smollm2_135m, model_type: 'gpt2' }, 'x/config.json')).toThrow(
      /x\/config.json: unsupported model_type "gpt2"/,
    );
    expect(() => parseHfConfig({ ...smollm2_135m, model_type: undefined })).toThrow(/unsupported model_type/);
    expect(() => parseHfConfig({ ...smollm2_135m, architectures: ['MistralForCausalLM'] })).toThrow(
      /unsupported architectures/,
    );
    expect(() => parseHfConfig({ ...smollm2_135m, hidden_act: 'gelu' })).toThrow(/hidden_act "gelu"/);
    expect(() => parseHfConfig({ ...smollm2_135m, rope_scaling: { rope_type: 'yarn', factor: 4 } })).toThrow(
      /rope_scaling type "yarn"/,
    );
    expect(() => parseHfConfig({ ...smollm2_135m, num_key_value_heads: 4 })).toThrow(/multiple of num_key_value_heads/);
    expect(() => parseHfConfig({ ...smollm2_135m, vocab_size: '49152' })).toThrow(
      /"vocab_size" must be a positive integer/,
    );
    expect(() => parseHfConfig({ ...qwen25_05b, use_sliding_window: true })).toThrow(/use_sliding_window/);
    expect(() => parseHfConfig([])).toThrow(/JSON object/);
  });

  it('scales rotary frequencies as Llama 3.1 does', () => {
    const c = parseHfConfig(llama32_1b);
    const inv = ropeInverseFrequencies(c);
    const base = (i: number) => 1 / Math.pow(500000, (2 * i) / 64);
    // Highest frequency (wavelength 2π < 8192/4): unchanged. Lowest (wavelength > 8192): divided by 32.
    expect(inv[0]).toBeCloseTo(base(0), 6);
    expect(inv[31]! / base(31)).toBeCloseTo(1 / 32, 5);
    // A band in between is interpolated: strictly between freq/32 and freq.
    const mids = [...inv].map((f, i) => f / base(i)).filter((r) => r > 1 / 32 + 1e-4 && r < 1 - 1e-4);
    expect(mids.length).toBeGreaterThan(0);
  });
});
