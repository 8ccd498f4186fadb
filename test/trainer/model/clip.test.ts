// The CLIP image tower on a tiny random checkpoint written in the Hugging Face layout: loading, shapes,
// determinism, and, where /usr/bin/python3 has numpy and PIL, agreement with PIL's preprocessing and an
// independent numpy forward pass over the same safetensors file.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClipImageEmbedder,
  ClipLoadError,
  expectedClipShapes,
  parseClipConfig,
  type ClipVisionConfig,
} from '../../../trainer/model/clip.ts';
import { writeSafetensorsDir, type NamedTensor } from '../../../trainer/model/safetensors.ts';
import { cosineSimilarity, frontendEvaluation } from '../../../tasks/similarity.ts';

const PY = '/usr/bin/python3';
const hasNumpyPil = spawnSync(PY, ['-c', 'import numpy, PIL'], { stdio: 'ignore' }).status === 0;
if (!hasNumpyPil) console.warn('[skip] CLIP cross-checks: /usr/bin/python3 with numpy and PIL not found');

const tinyJson = {
  architectures: ['CLIPModel'],
  projection_dim: 8,
  vision_config: {
    hidden_size: 32,
    intermediate_size: 48,
    num_attention_heads: 4,
    num_hidden_layers: 2,
    image_size: 64,
    patch_size: 16,
    hidden_act: 'quick_gelu',
    layer_norm_eps: 1e-5,
  },
};
const preprocessorJson = {
  crop_size: { height: 64, width: 64 },
  do_center_crop: true,
  do_normalize: true,
  do_resize: true,
  image_mean: [0.48145466, 0.4578275, 0.40821073],
  image_std: [0.26862954, 0.26130258, 0.27577711],
  resample: 3,
  size: { shortest_edge: 64 },
};

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomWeights(cfg: ClipVisionConfig, seed: number): Map<string, NamedTensor> {
  const r = rng(seed);
  const out = new Map<string, NamedTensor>();
  for (const [name, shape] of expectedClipShapes(cfg)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    const isNormScale = /(layer_norm\d|layrnorm|layernorm)\.weight$/.test(name);
    for (let i = 0; i < n; i++) data[i] = (isNormScale ? 1 : 0) + (r() - 0.5) * (isNormScale ? 0.4 : 0.5);
    out.set(name, { shape, data });
  }
  // A text-tower tensor, as a full CLIP checkpoint has: must be ignored.
  out.set('text_model.embeddings.token_embedding.weight', { shape: [10, 4], data: new Float32Array(40).fill(7) });
  return out;
}

function testPng(w: number, h: number, seed: number): Buffer {
  const r = rng(seed);
  const png = new PNG({ width: w, height: h });
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const i = (y * w + x) * 4;
      png.data[i] = (x * 255) / w;
      png.data[i + 1] = (y * 255) / h;
      png.data[i + 2] = r() * 255;
      png.data[i + 3] = 255;
    }
  }
  return PNG.sync.write(png);
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'sweetloop-clip-'));
const cfg = parseClipConfig(tinyJson);
let clip: ClipImageEmbedder;

async function writeModel(d: string, weights: Map<string, NamedTensor>): Promise<void> {
  await mkdir(d, { recursive: true });
  await writeSafetensorsDir(d, weights);
  writeFileSync(path.join(d, 'config.json'), JSON.stringify(tinyJson));
  writeFileSync(path.join(d, 'preprocessor_config.json'), JSON.stringify(preprocessorJson));
}

beforeAll(async () => {
  await writeModel(path.join(dir, 'model'), randomWeights(cfg, 1));
  clip = await ClipImageEmbedder.load(path.join(dir, 'model'), { backend: 'wasm' });
});
afterAll(() => {
  clip?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe('CLIP image tower (tiny random checkpoint)', () => {
  it('reads the config, defaulting to ViT-B/32 for missing fields', () => {
    expect(cfg).toMatchObject({
      hiddenSize: 32,
      numLayers: 2,
      numHeads: 4,
      imageSize: 64,
      patchSize: 16,
      projectionDim: 8,
    });
    expect(parseClipConfig({})).toMatchObject({
      hiddenSize: 768,
      intermediateSize: 3072,
      numLayers: 12,
      numHeads: 12,
      imageSize: 224,
      patchSize: 32,
      projectionDim: 512,
    });
  });

  it('embeds a screenshot-shaped PNG: projection-sized, finite, deterministic, image-dependent', async () => {
    const a = testPng(160, 100, 5);
    const b = testPng(100, 160, 6);
    const ea = await clip.embed(a);
    expect(ea).toBeInstanceOf(Float32Array);
    expect(ea.length).toBe(8);
    expect(ea.every(Number.isFinite)).toBe(true);
    expect(Array.from(await clip.embed(a))).toEqual(Array.from(ea));
    const eb = await clip.embed(b);
    expect(Array.from(eb)).not.toEqual(Array.from(ea));
    expect(cosineSimilarity(ea, ea)).toBeCloseTo(1, 6);
    const r = await frontendEvaluation(a, a, clip);
    expect(r.metric).toBe('clip-vit-b32');
    expect(r.similarity).toBeCloseTo(1, 5);
  });

  it('uses the weights it loads: a different checkpoint gives a different embedding', async () => {
    await writeModel(path.join(dir, 'other'), randomWeights(cfg, 2));
    const other = await ClipImageEmbedder.load(path.join(dir, 'other'), { initBackend: false });
    const png = testPng(80, 80, 7);
    expect(Array.from(await other.embed(png))).not.toEqual(Array.from(await clip.embed(png)));
    other.dispose();
  });

  it('refuses a directory that is not a matching CLIP checkpoint, naming what is wrong', async () => {
    await expect(ClipImageEmbedder.load(path.join(dir, 'nowhere'))).rejects.toThrow(/no config\.json/);
    const missing = randomWeights(cfg, 3);
    missing.delete('vision_model.encoder.layers.1.mlp.fc2.weight');
    await writeModel(path.join(dir, 'missing'), missing);
    await expect(ClipImageEmbedder.load(path.join(dir, 'missing'), { initBackend: false })).rejects.toThrow(
      ClipLoadError,
    );
    await expect(ClipImageEmbedder.load(path.join(dir, 'missing'), { initBackend: false })).rejects.toThrow(
      /missing vision_model\.encoder\.layers\.1\.mlp\.fc2\.weight/,
    );
    const wrong = randomWeights(cfg, 4);
    wrong.set('visual_projection.weight', { shape: [4, 32], data: new Float32Array(128) });
    await writeModel(path.join(dir, 'wrong'), wrong);
    await expect(ClipImageEmbedder.load(path.join(dir, 'wrong'), { initBackend: false })).rejects.toThrow(
      /visual_projection\.weight has shape \[4,32\], expected \[8,32\]/,
    );
  });
});

// An independent implementation: PIL for the preprocessing, numpy for the ViT, reading the same files.
const PY_REFERENCE = String.raw`
import json, struct, sys
import numpy as np
from PIL import Image
model, png, pixels_in = sys.argv[1], sys.argv[2], sys.argv[3]
cfg = json.load(open(model + '/config.json')); v = cfg['vision_config']
pp = json.load(open(model + '/preprocessor_config.json'))
img = Image.open(png).convert('RGB')
w, h = img.size; s = pp['size']['shortest_edge']
short, long = min(w, h), max(w, h); nl = int(s * long / short)
ow, oh = (s, nl) if w <= h else (nl, s)
img = img.resize((ow, oh), resample=Image.BICUBIC)
ch, cw = pp['crop_size']['height'], pp['crop_size']['width']
top, left = (oh - ch) // 2, (ow - cw) // 2
arr = np.asarray(img, dtype=np.float64)[top:top + ch, left:left + cw] / 255.0
arr = (arr - np.array(pp['image_mean'])) / np.array(pp['image_std'])
pil_pixels = arr.transpose(2, 0, 1)
raw = open(model + '/model.safetensors', 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]; header = json.loads(raw[8:8 + n]); base = 8 + n
def W(name):
    e = header[name]; a, b = e['data_offsets']
    return np.frombuffer(raw[base + a:base + b], dtype=np.float32).reshape(e['shape']).astype(np.float64)
x_in = np.fromfile(pixels_in, dtype=np.float32).astype(np.float64).reshape(pil_pixels.shape)
d, heads, p = v['hidden_size'], v['num_attention_heads'], v['patch_size']; g = v['image_size'] // p; hd = d // heads
def ln(x, pre):
    mu = x.mean(-1, keepdims=True); var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + v['layer_norm_eps']) * W(pre + '.weight') + W(pre + '.bias')
conv = W('vision_model.embeddings.patch_embedding.weight')
patches = np.zeros((g * g, d))
for i in range(g):
    for j in range(g):
        patches[i * g + j] = np.einsum('ckl,dckl->d', x_in[:, i * p:(i + 1) * p, j * p:(j + 1) * p], conv)
x = np.concatenate([W('vision_model.embeddings.class_embedding')[None], patches]) + W('vision_model.embeddings.position_embedding.weight')
x = ln(x, 'vision_model.pre_layrnorm')
lin = lambda t, pre: t @ W(pre + '.weight').T + W(pre + '.bias')
for l in range(v['num_hidden_layers']):
    pre = 'vision_model.encoder.layers.%d.' % l
    hcur = ln(x, pre + 'layer_norm1')
    q = lin(hcur, pre + 'self_attn.q_proj') * hd ** -0.5; k = lin(hcur, pre + 'self_attn.k_proj'); vv = lin(hcur, pre + 'self_attn.v_proj')
    out = np.zeros_like(x)
    for hh in range(heads):
        sl = slice(hh * hd, (hh + 1) * hd)
        sc = q[:, sl] @ k[:, sl].T; sc = np.exp(sc - sc.max(-1, keepdims=True)); sc /= sc.sum(-1, keepdims=True)
        out[:, sl] = sc @ vv[:, sl]
    x = x + lin(out, pre + 'self_attn.out_proj')
    m = lin(ln(x, pre + 'layer_norm2'), pre + 'mlp.fc1'); m = m / (1 + np.exp(-1.702 * m))
    x = x + lin(m, pre + 'mlp.fc2')
emb = ln(x[0], 'vision_model.post_layernorm') @ W('visual_projection.weight').T
print(json.dumps({'pixels': pil_pixels.astype(np.float32).ravel().tolist(), 'embedding': emb.tolist()}))
`;

describe.skipIf(!hasNumpyPil)('CLIP against PIL + numpy', () => {
  it('preprocesses like PIL bicubic + centre crop and embeds like an independent ViT', async () => {
    for (const [w, h, seed] of [
      [200, 120, 11],
      [90, 150, 12],
    ] as const) {
      const png = testPng(w, h, seed);
      const pngPath = path.join(dir, `img-${seed}.png`);
      writeFileSync(pngPath, png);
      const ours = clip.preprocess(png);
      const pixPath = path.join(dir, `pix-${seed}.f32`);
      writeFileSync(pixPath, Buffer.from(ours.buffer, ours.byteOffset, ours.byteLength));
      const run = spawnSync(PY, ['-c', PY_REFERENCE, path.join(dir, 'model'), pngPath, pixPath], {
        encoding: 'utf8',
        maxBuffer: 64 << 20,
      });
      expect(run.status, run.stderr).toBe(0);
      const ref = JSON.parse(run.stdout) as { pixels: number[]; embedding: number[] };
      let maxPix = 0;
      ref.pixels.forEach((v, i) => (maxPix = Math.max(maxPix, Math.abs(v - ours[i]!))));
      // Exact 8-bit agreement with PIL leaves only float32 rounding of the normalisation.
      expect(maxPix).toBeLessThan(1e-5);
      const emb = clip.embedPixels(ours);
      const scale = Math.max(...ref.embedding.map(Math.abs));
      ref.embedding.forEach((v, i) => expect(Math.abs(v - emb[i]!) / scale).toBeLessThan(1e-4));
    }
  });
});
