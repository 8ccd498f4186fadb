// Tiny models for the model-core tests: small enough that every test runs in well under a second.
import * as tf from '@tensorflow/tfjs';
import { llamaConfig, type ModelConfig } from '../../../trainer/model/architecture.ts';
import { initBackend } from '../../../trainer/model/backend.ts';
import { Decoder } from '../../../trainer/model/decoder.ts';

/**
 * GQA (4 query heads over 2 key/value heads, head_dim 8), untied head, and Llama-3 rope scaling whose three
 * frequency bands (kept, interpolated, divided) are all populated: every branch of the decoder.
 */
export function tinyConfig(over: Partial<ModelConfig> = {}): ModelConfig {
  return {
    ...llamaConfig({
      vocabSize: 37,
      hiddenSize: 32,
      intermediateSize: 48,
      numLayers: 2,
      numHeads: 4,
      numKvHeads: 2,
      tieWordEmbeddings: false,
      ropeScaling: {
        type: 'llama3',
        factor: 8,
        lowFreqFactor: 0.25,
        highFreqFactor: 2,
        originalMaxPositionEmbeddings: 16,
      },
    }),
    ...over,
  };
}

/** A decoder with large random weights (std 0.3) so that attention and the MLP are far from linear. */
export function tinyDecoder(cfg: ModelConfig = tinyConfig(), seed = 7, name = 'tiny'): Decoder {
  return new Decoder(cfg, { seed, initStd: 0.3, name });
}

export async function useBackend(name: 'wasm' | 'cpu'): Promise<void> {
  const info = await initBackend(name);
  if (info.name !== name) throw new Error(`wanted backend ${name}, got ${info.name}`);
}

export function maxRelDiff(a: tf.Tensor, b: tf.Tensor): number {
  return tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]! / Math.max(1e-30, tf.max(tf.abs(b)).dataSync()[0]!));
}

export function ids2d(rows: number[][]): tf.Tensor2D {
  return tf.tensor2d(rows, [rows.length, rows[0]!.length], 'int32');
}
