// How alike two page screenshots are, as a number in [0, 1], and which metric made it.
//
// The paper's metric is the cosine similarity of CLIP ViT-B/32 image embeddings; that needs weights the user
// provides (trainer/model/clip.ts implements ImageEmbedder for it). Without them, `pixel-ssim-v1` needs no
// download:
//   1. each screenshot is composited on white and box-averaged onto a grid 160 cells wide (8x8 pixels for a
//      1280-wide page), keeping its aspect ratio; the shorter grid is padded with its own bottom colour (a
//      page's background goes on below its content) up to the taller one's height (at most 640 rows);
//   2. structure: mean SSIM of the luma grids over 7x7 windows (standard constants for 8-bit values),
//      counting only windows where at least one image has detail, so two mostly-empty pages are not called
//      alike for their shared white space (two flat grids count as SSIM of their mean colours);
//   3. colour: histogram intersection of the two grids' colours in 4x4x4 RGB bins;
//   4. similarity = 0.7 x max(0, SSIM) + 0.3 x colour.
// Identical screenshots score 1; a blank page against a designed one scores far lower. It is a layout and
// colour measure, blind to what text says.
import { PNG } from 'pngjs';
import { wilson } from './stats.ts';

export type SimilarityMetric = 'pixel-ssim-v1' | 'clip-vit-b32';

export interface SimilarityResult {
  metric: SimilarityMetric;
  similarity: number;
}

/** An image embedding model (e.g. CLIP's image tower) for the paper's cosine metric. */
export interface ImageEmbedder {
  /** Recorded as the metric: 'clip-vit-b32' for CLIP ViT-B/32. */
  readonly name: SimilarityMetric;
  embed(png: Buffer): Promise<Float32Array>;
}

const GRID_W = 160;
const MAX_GRID_H = 640;
const WINDOW = 7;
const C1 = (0.01 * 255) ** 2;
const C2 = (0.03 * 255) ** 2;
const SSIM_WEIGHT = 0.7;
/** Luma standard deviation (0-255) below which a window counts as flat. */
const FLAT_STD = 2;

interface Grid {
  w: number;
  h: number;
  /** RGB, row-major, 0-255 floats. */
  rgb: Float32Array;
}

function decode(png: Buffer, which: string): PNG {
  try {
    return PNG.sync.read(png);
  } catch (err) {
    throw new Error(`similarity: the ${which} screenshot is not a readable PNG (${(err as Error).message})`);
  }
}

/** Box-average onto a grid GRID_W wide, compositing transparency on white. */
function toGrid(img: PNG): Grid {
  const w = GRID_W;
  const scale = img.width / w;
  const h = Math.max(1, Math.min(MAX_GRID_H, Math.round(img.height / scale)));
  const rgb = new Float32Array(w * h * 3);
  const count = new Float32Array(w * h);
  const colOf = new Int32Array(img.width);
  for (let x = 0; x < img.width; x++) colOf[x] = Math.min(w - 1, Math.floor(x / scale));
  const maxY = Math.min(img.height, Math.ceil(h * scale));
  const data = img.data;
  for (let y = 0; y < maxY; y++) {
    const rowBase = Math.min(h - 1, Math.floor(y / scale)) * w;
    let i = y * img.width * 4;
    for (let x = 0; x < img.width; x++, i += 4) {
      const g = rowBase + colOf[x]!;
      const a = data[i + 3]! / 255;
      const white = 255 * (1 - a);
      rgb[g * 3] = rgb[g * 3]! + data[i]! * a + white;
      rgb[g * 3 + 1] = rgb[g * 3 + 1]! + data[i + 1]! * a + white;
      rgb[g * 3 + 2] = rgb[g * 3 + 2]! + data[i + 2]! * a + white;
      count[g] = count[g]! + 1;
    }
  }
  for (let g = 0; g < w * h; g++) {
    const n = count[g]! || 1;
    rgb[g * 3] = rgb[g * 3]! / n;
    rgb[g * 3 + 1] = rgb[g * 3 + 1]! / n;
    rgb[g * 3 + 2] = rgb[g * 3 + 2]! / n;
  }
  return { w, h, rgb };
}

/** Extends a grid downwards with the median colour of its bottom row. */
function padTo(grid: Grid, h: number): Grid {
  if (grid.h >= h) return grid;
  const rgb = new Float32Array(grid.w * h * 3);
  rgb.set(grid.rgb);
  const last = (grid.h - 1) * grid.w;
  const fill = [0, 1, 2].map((c) => {
    const vals = Array.from({ length: grid.w }, (_, x) => grid.rgb[(last + x) * 3 + c]!).sort((a, b) => a - b);
    return vals[vals.length >> 1]!;
  });
  for (let g = grid.w * grid.h; g < grid.w * h; g++) {
    rgb[g * 3] = fill[0]!;
    rgb[g * 3 + 1] = fill[1]!;
    rgb[g * 3 + 2] = fill[2]!;
  }
  return { w: grid.w, h, rgb };
}

function luma(grid: Grid): Float32Array {
  const out = new Float32Array(grid.w * grid.h);
  for (let g = 0; g < out.length; g++)
    out[g] = 0.299 * grid.rgb[g * 3]! + 0.587 * grid.rgb[g * 3 + 1]! + 0.114 * grid.rgb[g * 3 + 2]!;
  return out;
}

/** Mean SSIM over windows with detail in either image; all-flat pairs compare their means. */
function ssim(a: Float32Array, b: Float32Array, w: number, h: number): number {
  const win = Math.min(WINDOW, w, h);
  let sum = 0;
  let n = 0;
  let flatSum = 0;
  let flatN = 0;
  const area = win * win;
  for (let y = 0; y + win <= h; y++) {
    for (let x = 0; x + win <= w; x++) {
      let sa = 0,
        sb = 0,
        saa = 0,
        sbb = 0,
        sab = 0;
      for (let dy = 0; dy < win; dy++) {
        const row = (y + dy) * w + x;
        for (let dx = 0; dx < win; dx++) {
          const va = a[row + dx]!;
          const vb = b[row + dx]!;
          sa += va;
          sb += vb;
          saa += va * va;
          sbb += vb * vb;
          sab += va * vb;
        }
      }
      const ma = sa / area,
        mb = sb / area;
      const va = Math.max(0, saa / area - ma * ma);
      const vb = Math.max(0, sbb / area - mb * mb);
      const cov = sab / area - ma * mb;
      const s = ((2 * ma * mb + C1) * (2 * cov + C2)) / ((ma * ma + mb * mb + C1) * (va + vb + C2));
      if (Math.sqrt(Math.max(va, vb)) < FLAT_STD) {
        flatSum += s;
        flatN++;
      } else {
        sum += s;
        n++;
      }
    }
  }
  if (n > 0) return sum / n;
  return flatN > 0 ? flatSum / flatN : 1;
}

function colourHistogram(grid: Grid): Float64Array {
  const hist = new Float64Array(64);
  const cells = grid.w * grid.h;
  for (let g = 0; g < cells; g++) {
    const bin = (c: number) => Math.min(3, Math.floor(grid.rgb[g * 3 + c]! / 64));
    const k = bin(0) * 16 + bin(1) * 4 + bin(2);
    hist[k] = hist[k]! + 1 / cells;
  }
  return hist;
}

/** The weight-free metric (see the top of this file), in [0, 1]. */
export function pixelSimilarity(referencePng: Buffer, candidatePng: Buffer): number {
  let a = toGrid(decode(referencePng, 'reference'));
  let b = toGrid(decode(candidatePng, 'candidate'));
  const h = Math.max(a.h, b.h);
  a = padTo(a, h);
  b = padTo(b, h);
  const structure = Math.max(0, ssim(luma(a), luma(b), a.w, h));
  const ha = colourHistogram(a);
  const hb = colourHistogram(b);
  let colour = 0;
  for (let i = 0; i < 64; i++) colour += Math.min(ha[i]!, hb[i]!);
  const s = SSIM_WEIGHT * structure + (1 - SSIM_WEIGHT) * colour;
  return Math.min(1, Math.max(0, s));
}

export function cosineSimilarity(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new Error(`cosine: embedding sizes differ (${a.length} vs ${b.length})`);
  let dot = 0,
    na = 0,
    nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/**
 * Similarity of a candidate page's screenshot to the reference's: the embedder's cosine (clamped at 0) when
 * one is given, else `pixel-ssim-v1`.
 */
export async function frontendEvaluation(
  referencePng: Buffer,
  candidatePng: Buffer,
  embedder?: ImageEmbedder,
): Promise<SimilarityResult> {
  if (!embedder) return { metric: 'pixel-ssim-v1', similarity: pixelSimilarity(referencePng, candidatePng) };
  const [ea, eb] = [await embedder.embed(referencePng), await embedder.embed(candidatePng)];
  return { metric: embedder.name, similarity: Math.min(1, Math.max(0, cosineSimilarity(ea, eb))) };
}

export interface WinRate {
  /** (wins + ties / 2) / n. */
  winRate: number;
  wins: number;
  ties: number;
  losses: number;
  n: number;
  /** 95% Wilson score interval of the win rate (ties counted as half a win). */
  ci95: [number, number];
}

/**
 * Share of tasks where policy A's score beats policy B's on the same task (the paper's frontend win rate),
 * ties counting half. Scores closer than `tieEpsilon` are ties.
 */
export function winRate(a: number[], b: number[], tieEpsilon = 1e-9): WinRate {
  if (a.length !== b.length)
    throw new Error(`winRate: ${a.length} scores against ${b.length}; they must be the same tasks`);
  let wins = 0,
    ties = 0,
    losses = 0;
  a.forEach((x, i) => {
    const d = x - b[i]!;
    if (Math.abs(d) <= tieEpsilon) ties++;
    else if (d > 0) wins++;
    else losses++;
  });
  const n = a.length;
  if (n === 0) return { winRate: 0, wins, ties, losses, n, ci95: [0, 1] };
  const w = wilson(wins + ties / 2, n);
  return { winRate: w.estimate, wins, ties, losses, n, ci95: [w.lo, w.hi] };
}
