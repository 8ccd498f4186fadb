// CLIP's image tower (ViT, e.g. openai/clip-vit-base-patch32) in TensorFlow.js, for the paper's frontend
// metric: cosine similarity of the image embeddings of two screenshots.
//
// Weights come from a local Hugging Face directory (config.json + model.safetensors, optionally
// preprocessor_config.json); only `vision_model.*` and `visual_projection.weight` are read, so the full
// CLIP checkpoint or a vision-only export both work. Nothing is downloaded.
//
// Preprocessing follows CLIPImageProcessor: composite on white, resize so the shortest side is 224 with
// PIL-style antialiased bicubic resampling (8-bit rounding after each pass, as PIL does), centre crop
// 224x224, scale to [0, 1], normalise with CLIP's mean and std.
// Forward pass as HF CLIPVisionModel + visual_projection: patch embedding (a strided convolution, done as
// a matmul over flattened patches), class token, position embeddings, pre-LayerNorm, pre-norm encoder
// layers (attention, quick-GELU MLP), post-LayerNorm of the class token, projection. Returned embeddings
// are not normalised (cosine normalises).
import * as tf from '@tensorflow/tfjs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PNG } from 'pngjs';
import type { ImageEmbedder } from '../../tasks/similarity.ts';
import { initBackend, type BackendChoice } from './backend.ts';
import { readSafetensorsDir, type NamedTensor } from './safetensors.ts';

export interface ClipVisionConfig {
  hiddenSize: number;
  intermediateSize: number;
  numHeads: number;
  numLayers: number;
  imageSize: number;
  patchSize: number;
  layerNormEps: number;
  hiddenAct: 'quick_gelu' | 'gelu';
  projectionDim: number;
}

export interface ClipPreprocessConfig {
  /** Shortest side after resizing. */
  shortestEdge: number;
  cropHeight: number;
  cropWidth: number;
  mean: [number, number, number];
  std: [number, number, number];
  resample: 'bicubic' | 'bilinear';
}

export class ClipLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClipLoadError';
  }
}

const CLIP_MEAN: [number, number, number] = [0.48145466, 0.4578275, 0.40821073];
const CLIP_STD: [number, number, number] = [0.26862954, 0.26130258, 0.27577711];

type Json = Record<string, unknown>;
const num = (v: unknown, d: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : d);

/** Reads config.json (CLIPConfig or CLIPVisionConfig); missing fields take CLIPVisionConfig's defaults (ViT-B/32). */
export function parseClipConfig(json: Json): ClipVisionConfig {
  const v = (json.vision_config && typeof json.vision_config === 'object' ? json.vision_config : json) as Json;
  const act = v.hidden_act ?? 'quick_gelu';
  if (act !== 'quick_gelu' && act !== 'gelu')
    throw new ClipLoadError(`unsupported hidden_act ${JSON.stringify(act)} (quick_gelu or gelu)`);
  const cfg: ClipVisionConfig = {
    hiddenSize: num(v.hidden_size, 768),
    intermediateSize: num(v.intermediate_size, 3072),
    numHeads: num(v.num_attention_heads, 12),
    numLayers: num(v.num_hidden_layers, 12),
    imageSize: num(v.image_size, 224),
    patchSize: num(v.patch_size, 32),
    layerNormEps: num(v.layer_norm_eps, 1e-5),
    hiddenAct: act,
    projectionDim: num(json.projection_dim, num(v.projection_dim, 512)),
  };
  if (cfg.hiddenSize % cfg.numHeads !== 0)
    throw new ClipLoadError(`hidden_size ${cfg.hiddenSize} is not divisible by num_attention_heads ${cfg.numHeads}`);
  if (cfg.imageSize % cfg.patchSize !== 0)
    throw new ClipLoadError(`image_size ${cfg.imageSize} is not a multiple of patch_size ${cfg.patchSize}`);
  return cfg;
}

/** Reads preprocessor_config.json (old and new layouts of `size` / `crop_size`). */
export function parsePreprocessConfig(json: Json | undefined, imageSize: number): ClipPreprocessConfig {
  const j = json ?? {};
  const size = j.size;
  const crop = j.crop_size;
  const shortestEdge = typeof size === 'number' ? size : num((size as Json | undefined)?.shortest_edge, imageSize);
  const cropHeight = typeof crop === 'number' ? crop : num((crop as Json | undefined)?.height, imageSize);
  const cropWidth = typeof crop === 'number' ? crop : num((crop as Json | undefined)?.width, imageSize);
  const triple = (v: unknown, d: [number, number, number]): [number, number, number] =>
    Array.isArray(v) && v.length === 3 && v.every((x) => typeof x === 'number') ? (v as [number, number, number]) : d;
  // PIL resample codes: 2 = bilinear, 3 = bicubic (CLIP's).
  const resample = j.resample === 2 ? 'bilinear' : 'bicubic';
  return {
    shortestEdge,
    cropHeight,
    cropWidth,
    mean: triple(j.image_mean, CLIP_MEAN),
    std: triple(j.image_std, CLIP_STD),
    resample,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Preprocessing, as PIL's Image.resize (separable, antialiased convolution resampling) + HF centre crop.

function cubic(x: number): number {
  const a = -0.5;
  x = Math.abs(x);
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}
const linear = (x: number): number => Math.max(0, 1 - Math.abs(x));
const PRECISION = 2 ** 22;

/** One resampling pass over `n` lines of `inLen` samples with `channels` interleaved channels, 8-bit rounded. */
function resample1d(
  src: Uint8Array,
  inLen: number,
  outLen: number,
  lines: number,
  channels: number,
  stride: { sample: number; line: number },
  outStride: { sample: number; line: number },
  out: Uint8Array,
  kernel: 'bicubic' | 'bilinear',
): void {
  const filter = kernel === 'bicubic' ? cubic : linear;
  const support0 = kernel === 'bicubic' ? 2 : 1;
  const scale = inLen / outLen;
  const fscale = Math.max(scale, 1);
  const support = support0 * fscale;
  for (let o = 0; o < outLen; o++) {
    const centre = (o + 0.5) * scale;
    const xmin = Math.max(0, Math.floor(centre - support + 0.5));
    const xmax = Math.min(inLen, Math.floor(centre + support + 0.5));
    const weights: number[] = [];
    let total = 0;
    for (let x = xmin; x < xmax; x++) {
      const w = filter((x - centre + 0.5) / fscale);
      weights.push(w);
      total += w;
    }
    // PIL's 8-bit path: coefficients normalised, then fixed point with 22 fractional bits, rounded half away
    // from zero; sums start at one half and are shifted back; results clipped to 0..255.
    const fixed = weights.map((w) => {
      const v = (total === 0 ? 0 : w / total) * PRECISION;
      return v < 0 ? Math.trunc(v - 0.5) : Math.trunc(v + 0.5);
    });
    for (let l = 0; l < lines; l++) {
      for (let c = 0; c < channels; c++) {
        let acc = PRECISION / 2;
        for (let k = 0; k < fixed.length; k++)
          acc += src[(xmin + k) * stride.sample + l * stride.line + c]! * fixed[k]!;
        out[o * outStride.sample + l * outStride.line + c] =
          acc <= 0 ? 0 : acc >= 256 * PRECISION ? 255 : Math.floor(acc / PRECISION);
      }
    }
  }
}

/** Decoded RGB (8-bit, transparency composited on white), resized and cropped, as CHW floats normalised. */
export function preprocessPng(
  png: Buffer,
  pp: ClipPreprocessConfig,
): { pixels: Float32Array; height: number; width: number } {
  let img: PNG;
  try {
    img = PNG.sync.read(png);
  } catch (err) {
    throw new Error(`CLIP: not a readable PNG (${(err as Error).message})`);
  }
  const { width: w, height: h } = img;
  const rgb = new Uint8Array(w * h * 3);
  for (let i = 0; i < w * h; i++) {
    const a = img.data[i * 4 + 3]! / 255;
    for (let c = 0; c < 3; c++) rgb[i * 3 + c] = Math.round(img.data[i * 4 + c]! * a + 255 * (1 - a));
  }
  // Shortest side to `shortestEdge`, the other in proportion (truncated, as HF does).
  const short = Math.min(w, h);
  const long = Math.max(w, h);
  const newShort = pp.shortestEdge;
  const newLong = Math.floor((newShort * long) / short);
  const [ow, oh] = w <= h ? [newShort, newLong] : [newLong, newShort];
  // Horizontal pass, then vertical, each rounded to 8 bits (PIL's order for a two-axis resize).
  const tmp = new Uint8Array(ow * h * 3);
  resample1d(rgb, w, ow, h, 3, { sample: 3, line: w * 3 }, { sample: 3, line: ow * 3 }, tmp, pp.resample);
  const resized = new Uint8Array(ow * oh * 3);
  resample1d(tmp, h, oh, ow, 3, { sample: ow * 3, line: 3 }, { sample: ow * 3, line: 3 }, resized, pp.resample);
  // Centre crop (HF: top = (h - ch) // 2), padding with zeros if the image is smaller than the crop.
  const ch = pp.cropHeight,
    cw = pp.cropWidth;
  const top = Math.floor((oh - ch) / 2);
  const left = Math.floor((ow - cw) / 2);
  const pixels = new Float32Array(3 * ch * cw);
  for (let y = 0; y < ch; y++) {
    for (let x = 0; x < cw; x++) {
      const sy = y + top,
        sx = x + left;
      for (let c = 0; c < 3; c++) {
        const v = sy >= 0 && sy < oh && sx >= 0 && sx < ow ? resized[(sy * ow + sx) * 3 + c]! / 255 : 0;
        pixels[c * ch * cw + y * cw + x] = (v - pp.mean[c]!) / pp.std[c]!;
      }
    }
  }
  return { pixels, height: ch, width: cw };
}

// ---------------------------------------------------------------------------------------------------------

const LAYER_KEYS = [
  'self_attn.q_proj.weight',
  'self_attn.q_proj.bias',
  'self_attn.k_proj.weight',
  'self_attn.k_proj.bias',
  'self_attn.v_proj.weight',
  'self_attn.v_proj.bias',
  'self_attn.out_proj.weight',
  'self_attn.out_proj.bias',
  'layer_norm1.weight',
  'layer_norm1.bias',
  'mlp.fc1.weight',
  'mlp.fc1.bias',
  'mlp.fc2.weight',
  'mlp.fc2.bias',
  'layer_norm2.weight',
  'layer_norm2.bias',
];

/** Every tensor the image tower needs, with its expected shape. */
export function expectedClipShapes(cfg: ClipVisionConfig): Map<string, number[]> {
  const d = cfg.hiddenSize,
    f = cfg.intermediateSize,
    p = cfg.patchSize;
  const seq = (cfg.imageSize / p) ** 2 + 1;
  const m = new Map<string, number[]>([
    ['vision_model.embeddings.class_embedding', [d]],
    ['vision_model.embeddings.patch_embedding.weight', [d, 3, p, p]],
    ['vision_model.embeddings.position_embedding.weight', [seq, d]],
    ['vision_model.pre_layrnorm.weight', [d]],
    ['vision_model.pre_layrnorm.bias', [d]],
    ['vision_model.post_layernorm.weight', [d]],
    ['vision_model.post_layernorm.bias', [d]],
    ['visual_projection.weight', [cfg.projectionDim, d]],
  ]);
  for (let i = 0; i < cfg.numLayers; i++) {
    for (const k of LAYER_KEYS) {
      const name = `vision_model.encoder.layers.${i}.${k}`;
      const shape = k.startsWith('mlp.fc1.weight')
        ? [f, d]
        : k === 'mlp.fc1.bias'
          ? [f]
          : k === 'mlp.fc2.weight'
            ? [d, f]
            : k.endsWith('.weight') && k.includes('proj')
              ? [d, d]
              : [d];
      m.set(name, shape);
    }
  }
  return m;
}

export class ClipImageEmbedder implements ImageEmbedder {
  readonly name = 'clip-vit-b32' as const;
  private disposed = false;

  private constructor(
    readonly config: ClipVisionConfig,
    readonly preprocessConfig: ClipPreprocessConfig,
    private readonly w: Map<string, tf.Tensor>,
  ) {}

  /**
   * Loads a Hugging Face CLIP directory. Initialises the tfjs backend (the best available, or `backend`) unless
   * `initBackend: false` (the caller already chose one).
   */
  static async load(
    dir: string,
    opts: { backend?: BackendChoice; initBackend?: boolean } = {},
  ): Promise<ClipImageEmbedder> {
    const readJson = async (file: string, required: boolean): Promise<Json | undefined> => {
      let text: string;
      try {
        text = await readFile(path.join(dir, file), 'utf8');
      } catch {
        if (required)
          throw new ClipLoadError(
            `${dir}: no ${file}; expected a Hugging Face CLIP directory (config.json, model.safetensors)`,
          );
        return undefined;
      }
      try {
        return JSON.parse(text) as Json;
      } catch (e) {
        throw new ClipLoadError(`${path.join(dir, file)}: not valid JSON (${(e as Error).message})`);
      }
    };
    const config = parseClipConfig((await readJson('config.json', true))!);
    const pre = parsePreprocessConfig(await readJson('preprocessor_config.json', false), config.imageSize);
    if (pre.cropHeight !== config.imageSize || pre.cropWidth !== config.imageSize) {
      throw new ClipLoadError(
        `${dir}: crop ${pre.cropWidth}x${pre.cropHeight} does not match image_size ${config.imageSize}`,
      );
    }
    const wanted = expectedClipShapes(config);
    const stored = await readSafetensorsDir(dir, (name) => wanted.has(name));
    const problems: string[] = [];
    for (const [name, shape] of wanted) {
      const t = stored.get(name);
      if (!t) problems.push(`missing ${name}`);
      else if (t.shape.join(',') !== shape.join(','))
        problems.push(`${name} has shape [${t.shape}], expected [${shape}]`);
    }
    if (problems.length)
      throw new ClipLoadError(
        `${dir}: not a CLIP image tower for this config.json: ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? ` (+${problems.length - 5} more)` : ''}`,
      );
    if (opts.initBackend !== false) await initBackend(opts.backend);
    const w = new Map<string, tf.Tensor>();
    const d = config.hiddenSize;
    for (const [name, t] of stored as Map<string, NamedTensor>) {
      // Kept in the layout the forward pass multiplies with: linear weights transposed to [in, out], the patch
      // convolution flattened to [3*p*p, d] in (channel, row, column) order.
      let tensor: tf.Tensor = tf.tensor(t.data, t.shape, 'float32');
      if (name.endsWith('patch_embedding.weight')) tensor = tf.tidy(() => tf.transpose(tf.reshape(tensor, [d, -1])));
      else if (t.shape.length === 2 && !name.endsWith('position_embedding.weight'))
        tensor = tf.tidy(() => tf.transpose(tensor));
      w.set(name, tensor);
    }
    return new ClipImageEmbedder(config, pre, w);
  }

  private get(name: string): tf.Tensor {
    const t = this.w.get(name);
    if (!t) throw new Error(`CLIP weight ${name} not loaded`);
    return t;
  }

  private layerNorm(x: tf.Tensor2D, prefix: string): tf.Tensor2D {
    const { mean, variance } = tf.moments(x, -1, true);
    const normed = tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, this.config.layerNormEps)));
    return tf.add(tf.mul(normed, this.get(`${prefix}.weight`)), this.get(`${prefix}.bias`)) as tf.Tensor2D;
  }

  private linear(x: tf.Tensor2D, prefix: string, bias = true): tf.Tensor2D {
    const y = tf.matMul(x, this.get(`${prefix}.weight`) as tf.Tensor2D);
    return (bias ? tf.add(y, this.get(`${prefix}.bias`)) : y) as tf.Tensor2D;
  }

  /** Image embedding of preprocessed CHW pixels, before normalisation. */
  embedPixels(pixels: Float32Array): Float32Array {
    if (this.disposed) throw new Error('CLIP embedder used after dispose()');
    const c = this.config;
    const p = c.patchSize,
      g = c.imageSize / p,
      d = c.hiddenSize,
      heads = c.numHeads,
      hd = d / heads;
    if (pixels.length !== 3 * c.imageSize * c.imageSize)
      throw new Error(`CLIP: expected 3x${c.imageSize}x${c.imageSize} pixels, got ${pixels.length} values`);
    const out = tf.tidy(() => {
      // [3, g*p, g*p] -> [g, g, 3, p, p] -> [g*g, 3*p*p]: each row one patch, flattened like the conv weight.
      const img = tf.tensor(pixels, [3, g, p, g, p]);
      const patches = tf.reshape(tf.transpose(img, [1, 3, 0, 2, 4]), [g * g, 3 * p * p]) as tf.Tensor2D;
      const embedded = tf.matMul(patches, this.get('vision_model.embeddings.patch_embedding.weight') as tf.Tensor2D);
      const cls = tf.reshape(this.get('vision_model.embeddings.class_embedding'), [1, d]);
      let x = tf.add(
        tf.concat([cls, embedded], 0),
        this.get('vision_model.embeddings.position_embedding.weight'),
      ) as tf.Tensor2D;
      x = this.layerNorm(x, 'vision_model.pre_layrnorm');
      const seq = g * g + 1;
      for (let i = 0; i < c.numLayers; i++) {
        const pre = `vision_model.encoder.layers.${i}`;
        const h = this.layerNorm(x, `${pre}.layer_norm1`);
        const split = (t: tf.Tensor2D) => tf.transpose(tf.reshape(t, [seq, heads, hd]), [1, 0, 2]) as tf.Tensor3D;
        const q = split(tf.mul(this.linear(h, `${pre}.self_attn.q_proj`), 1 / Math.sqrt(hd)) as tf.Tensor2D);
        const k = split(this.linear(h, `${pre}.self_attn.k_proj`));
        const v = split(this.linear(h, `${pre}.self_attn.v_proj`));
        const attn = tf.softmax(tf.matMul(q, k, false, true));
        const ctx = tf.reshape(tf.transpose(tf.matMul(attn, v), [1, 0, 2]), [seq, d]) as tf.Tensor2D;
        x = tf.add(x, this.linear(ctx, `${pre}.self_attn.out_proj`)) as tf.Tensor2D;
        const m = this.linear(this.layerNorm(x, `${pre}.layer_norm2`), `${pre}.mlp.fc1`);
        const act = c.hiddenAct === 'quick_gelu' ? tf.mul(m, tf.sigmoid(tf.mul(m, 1.702))) : geluErf(m);
        x = tf.add(x, this.linear(act as tf.Tensor2D, `${pre}.mlp.fc2`)) as tf.Tensor2D;
      }
      const pooled = this.layerNorm(tf.slice(x, [0, 0], [1, d]) as tf.Tensor2D, 'vision_model.post_layernorm');
      return this.linear(pooled, 'visual_projection', false);
    });
    const data = out.dataSync() as Float32Array;
    out.dispose();
    return new Float32Array(data);
  }

  preprocess(png: Buffer): Float32Array {
    return preprocessPng(png, this.preprocessConfig).pixels;
  }

  async embed(png: Buffer): Promise<Float32Array> {
    return this.embedPixels(this.preprocess(png));
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const t of this.w.values()) t.dispose();
    this.w.clear();
  }
}

/** Exact GELU, 0.5 x (1 + erf(x / sqrt 2)). */
function geluErf(x: tf.Tensor): tf.Tensor {
  return tf.mul(tf.mul(x, 0.5), tf.add(1, tf.erf(tf.div(x, Math.SQRT2))));
}
