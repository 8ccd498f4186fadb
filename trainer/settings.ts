// The trainer's settings (what bin/commands/trainer.ts reads from the configuration) and the parts built from them
// that every trainer command, and the study calibration (bot/report/calibration.ts), play with: the simulated
// collaborator and the scorer.
import type { DataSource } from '../prisma/data-source.ts';
import { createScorer, type Scorer } from '../tasks/scorer.ts';
import { RULE_SIMULATOR, type CollaboratorFactory } from './simulate.ts';

export interface TrainerSettings {
  checkpointRoot: string;
  seed: number;
  ratingWeight: number;
  /** The promotion gate: significance level, non-inferiority margin on the score (0: must be better). */
  promotionAlpha: number;
  promotionMargin: number;
  /** Difference in success rate the gate's games count is sized to detect, and with which power. */
  promotionEffect: number;
  promotionPower: number;
  /** Percent (1-99) of new sessions a candidate that passes the gate gets in an A/B experiment with people instead of being deployed; 0: deploy. */
  promotionHumanAbShare: number;
  minNewSessions: number;
  pollSeconds: number;
  bwrapPath: string;
  pythonPath: string;
  chromiumPath: string;
  /** Hugging Face CLIP directory for the paper's frontend metric; unset: the weight-free pixel metric. */
  clipModelDir?: string;
  llmSimulator?: { url: string; model: string; key?: string };
  progress: 'bar' | 'lines' | 'none';
  /** The data runs train on unless `sweetloop train` says otherwise (TRAINER_DATA and its companions). */
  trainingData: TrainingDataSettings;
  /** sweet runs: people's pairwise preferences are extra critic pairs unless `sweetloop train` says otherwise. */
  usePreferences: boolean;
  /** A server's largest LoRA rank when its endpoint version records none (VLLM_MAX_LORA_RANK). */
  maxLoraRank: number;
  /** The service: rank of a fresh adapter on a served base (TRAINER_LORA_RANK). */
  loraRank: number;
  /** The service: longest wait after failing cycles (TRAINER_MAX_BACKOFF_SECONDS). */
  maxBackoffSeconds: number;
}

export interface TrainingDataSettings {
  source: DataSource;
  /** With `both`: the share of simulated sessions kept, in (0, 1]. */
  simulatedWeight: number;
  minQuality?: number;
  minRating?: number;
  /** Only this study's sessions (TRAINER_STUDY, `sweetloop train --study`). */
  study?: string;
}

/**
 * The simulated collaborator: `builtin` the rule-based one, `llm` the one behind SIMULATOR_LLM_URL (an error when
 * none is configured), `configured` the LLM one when configured, else the rule-based one.
 */
export async function collaboratorFactory(
  s: TrainerSettings,
  which: 'configured' | 'builtin' | 'llm' = 'configured',
): Promise<CollaboratorFactory> {
  if (which === 'builtin' || (which === 'configured' && !s.llmSimulator)) return RULE_SIMULATOR;
  if (!s.llmSimulator)
    throw new Error('the LLM simulator is not configured: set SIMULATOR_LLM_URL and SIMULATOR_LLM_MODEL');
  const { createLlmCollaborator } = await import('../tasks/llm-simulator.ts');
  const llm = s.llmSimulator;
  return {
    name: `llm:${llm.model}`,
    create: (task) =>
      createLlmCollaborator(task, { url: llm.url, model: llm.model, ...(llm.key ? { key: llm.key } : {}) }),
  };
}

/** The scorer for simulate/evaluate/train; with `clipModelDir` frontend pages are compared by CLIP, whose weights it frees on close. */
export async function scorer(s: TrainerSettings): Promise<Scorer> {
  // withTrainer has already initialised the tfjs backend, so the embedder must not pick another one.
  const embedder = s.clipModelDir
    ? await (await import('./model/clip.ts')).ClipImageEmbedder.load(s.clipModelDir, { initBackend: false })
    : undefined;
  const sc = createScorer({ bwrapPath: s.bwrapPath, pythonPath: s.pythonPath, chromiumPath: s.chromiumPath, embedder });
  return {
    evaluate: (task, answer) => sc.evaluate(task, answer),
    async close() {
      try {
        await sc.close();
      } finally {
        embedder?.dispose();
      }
    },
  };
}
