// Hugging Face model directories: config.json + model.safetensors (or shards + index). Tokenizer files are
// the caller's business (copied alongside). Optimizer state lives next to the weights in
// optimizer.safetensors (moments by parameter name, step in the metadata), so training resumes exactly.

import { createHash } from 'node:crypto';
import { promises as fs, createReadStream } from 'node:fs';
import path from 'node:path';
import { parseHfConfig, toHfConfig, type ModelConfig } from './architecture.ts';
import { Decoder, parameterShapes } from './decoder.ts';
import type { AdamW } from './optim.ts';
import {
  openSafetensors,
  readSafetensors,
  readSafetensorsDir,
  writeFileAtomic,
  writeSafetensors,
  writeSafetensorsDir,
  type StoredDtype,
} from './safetensors.ts';

export const CONFIG_FILE = 'config.json';
export const OPTIMIZER_FILE = 'optimizer.safetensors';

/** Reads and validates dir/config.json. */
export async function readConfig(dir: string): Promise<ModelConfig> {
  const file = path.join(dir, CONFIG_FILE);
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (e) {
    throw new Error(`${file}: cannot read model config: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new Error(`${file}: not valid JSON: ${(e as Error).message}`);
  }
  return parseHfConfig(raw, file);
}

// Buffers some HF checkpoints carry that are not parameters (recomputed from the config here).
const IGNORED = [/\.rotary_emb\.inv_freq$/, /\.attn\.masked_bias$/];

/**
 * Loads a Hugging Face model directory into a new Decoder. Every parameter the config implies must be
 * present with the right shape, and nothing else may be (apart from lm_head.weight next to tied embeddings,
 * and rotary buffers), so a checkpoint of another architecture fails loudly instead of loading half.
 */
export async function loadCheckpoint(
  dir: string,
  opts: { name?: string; trainable?: boolean } = {},
): Promise<{ model: Decoder; config: ModelConfig }> {
  const config = await readConfig(dir);
  const expected = parameterShapes(config);
  const weights = await readSafetensorsDir(
    dir,
    (n) => !IGNORED.some((r) => r.test(n)) && !(config.tieWordEmbeddings && n === 'lm_head.weight'),
  );
  const unexpected = [...weights.keys()].filter((n) => !expected.has(n));
  if (unexpected.length) {
    throw new Error(
      `${dir}: checkpoint has ${unexpected.length} tensor(s) this ${config.modelType} config does not use: ${unexpected.slice(0, 5).join(', ')}${unexpected.length > 5 ? ', ...' : ''}`,
    );
  }
  try {
    return {
      model: new Decoder(config, { name: opts.name ?? path.basename(dir), weights, trainable: opts.trainable }),
      config,
    };
  } catch (e) {
    throw new Error(`${dir}: ${(e as Error).message}`);
  }
}

/**
 * Saves config.json and the base weights (F32 by default; BF16 halves the size, lossy) into dir, and the
 * optimizer state when given. Existing files of the same names are replaced atomically. Returns the
 * checkpoint's sha256 (see checkpointSha256).
 */
export async function saveCheckpoint(
  dir: string,
  decoder: Decoder,
  opts: { dtype?: StoredDtype; optimizer?: AdamW; maxShardBytes?: number } = {},
): Promise<string> {
  await fs.mkdir(dir, { recursive: true });
  await writeFileAtomic(path.join(dir, CONFIG_FILE), JSON.stringify(toHfConfig(decoder.config), null, 2) + '\n');
  await writeSafetensorsDir(dir, decoder.weightTensors(), { dtype: opts.dtype, maxShardBytes: opts.maxShardBytes });
  if (opts.optimizer) await saveOptimizer(dir, opts.optimizer);
  return checkpointSha256(dir);
}

export async function saveOptimizer(dir: string, optimizer: AdamW): Promise<void> {
  await writeSafetensors(path.join(dir, OPTIMIZER_FILE), optimizer.stateTensors(), {
    metadata: { step: String(optimizer.step) },
  });
}

/** Restores AdamW moments and step saved by saveOptimizer; names and shapes must match the optimizer's parameters. */
export async function loadOptimizer(dir: string, optimizer: AdamW): Promise<void> {
  const file = path.join(dir, OPTIMIZER_FILE);
  const f = await openSafetensors(file);
  const step = Number(f.metadata.step);
  await f.close();
  if (!Number.isInteger(step) || step < 0) throw new Error(`${file}: metadata has no valid "step"`);
  try {
    optimizer.loadStateTensors(await readSafetensors(file), step);
  } catch (e) {
    throw new Error(`${file}: ${(e as Error).message}`);
  }
}

async function fileSha256(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}

/**
 * Identity of a checkpoint for the PolicyVersion record: sha256 over the lines "<relative path>\0<sha256 of
 * file>\n" of every file in dir (recursively, sorted by path), except optimizer state and temporary files —
 * the same weights, config and tokenizer give the same hash wherever they are stored.
 */
export async function checkpointSha256(dir: string): Promise<string> {
  const files: string[] = [];
  const walk = async (rel: string) => {
    for (const e of await fs.readdir(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(r);
      else if (e.isFile() && e.name !== OPTIMIZER_FILE && !e.name.includes('.tmp-')) files.push(r);
    }
  };
  await walk('');
  files.sort();
  const h = createHash('sha256');
  for (const f of files) h.update(`${f}\0${await fileSha256(path.join(dir, f))}\n`);
  return h.digest('hex');
}
