// Scores a frontend answer: render the reference page and the answer offline (tasks/render.ts), then compare
// the two screenshots (tasks/similarity.ts). ColBench reports the mean similarity and win rates, not a pass
// mark; `success` here means similarity >= threshold (default 0.9: for pixel-ssim-v1 that is the level of a
// page with the right layout and mostly the right colours; a different page of the sample scores ~0.3 and
// a blank page ~0.4 on average).
import type { FrontendTask } from './model.ts';
import { stripCodeFences } from './answer.ts';
import { RenderError, type Renderer, type RenderResult } from './render.ts';
import { frontendEvaluation, type ImageEmbedder, type SimilarityMetric } from './similarity.ts';

/** Stored with every Evaluation row; bump when scoring could change for the same answer. */
// v2: a candidate page the renderer refuses (request or byte cap, deadline, crash) scores 0 instead of failing the evaluation.
export const FRONTEND_EVALUATOR_VERSION = 'frontend-chromium-v2';
export const DEFAULT_FRONTEND_THRESHOLD = 0.9;

export interface FrontendEvaluation {
  /** The similarity, in [0, 1]. */
  score: number;
  success: boolean;
  metric: SimilarityMetric;
  detail: {
    metric: SimilarityMetric;
    similarity: number;
    threshold: number;
    reference: { width: number; height: number; blockedRequests: string[] };
    candidate: { width: number; height: number; blockedRequests: string[] };
  };
  error?: string;
}

export interface FrontendEvalOptions {
  renderer: Renderer;
  /** CLIP (or another image embedder); without one the weight-free pixel-ssim-v1 metric is used. */
  embedder?: ImageEmbedder;
  threshold?: number;
  /** The reference screenshot when the caller already has it (it depends only on the task). */
  referencePng?: Buffer;
}

/** Width and height from a PNG's IHDR chunk. */
function pngSize(png: Buffer): { width: number; height: number } {
  if (png.length < 24 || png.readUInt32BE(12) !== 0x49484452)
    throw new Error('frontend evaluation: the reference screenshot is not a PNG');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

export async function evaluateFrontend(
  task: FrontendTask,
  answerHtml: string,
  opts: FrontendEvalOptions,
): Promise<FrontendEvaluation> {
  const threshold = opts.threshold ?? DEFAULT_FRONTEND_THRESHOLD;
  const html = stripCodeFences(answerHtml);
  const reference = opts.referencePng
    ? { png: opts.referencePng, blockedRequests: [] as string[], ...pngSize(opts.referencePng) }
    : await opts.renderer.render(task.reference);
  let candidate: RenderResult | null = null;
  let refused: string | null = null;
  try {
    candidate = await opts.renderer.render(html);
  } catch (err) {
    // The answer's own doing, the same on every try: it scores 0 and says why. Anything else (Chromium gone) throws,
    // so the evaluation is tried again later.
    if (!(err instanceof RenderError && err.pageFault)) throw err;
    refused = `the page cannot be rendered: ${err.message.replace(/^render: /, '')}`;
  }
  const { metric, similarity } = candidate
    ? await frontendEvaluation(reference.png, candidate.png, opts.embedder)
    : { metric: opts.embedder?.name ?? ('pixel-ssim-v1' as const), similarity: 0 };
  const out: FrontendEvaluation = {
    score: similarity,
    success: similarity >= threshold,
    metric,
    detail: {
      metric,
      similarity,
      threshold,
      reference: { width: reference.width, height: reference.height, blockedRequests: reference.blockedRequests },
      candidate: candidate
        ? { width: candidate.width, height: candidate.height, blockedRequests: candidate.blockedRequests }
        : { width: 0, height: 0, blockedRequests: [] },
    },
  };
  if (refused) out.error = refused;
  else if (html.trim() === '') out.error = 'empty answer';
  return out;
}
