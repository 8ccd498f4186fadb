// Who plays a starter's demonstration games (starter.ts, StarterRecipe.demonstrators). Its own module, so that
// trainer/presets.ts can validate it without loading the recipe, and the recipe need not import the presets.
import { z } from 'zod';

export const demonstratorMixSchema = z.object({
  expert: z.number().min(0),
  hasty: z.number().min(0),
  noisy: z.number().min(0),
  /** The noisy expert's mistake probability. */
  noise: z.number().min(0).max(1),
});

/** Weights of the careful expert, the hasty agent and the noisy expert, and the noisy expert's mistake rate. */
export type DemonstratorMix = z.infer<typeof demonstratorMixSchema>;
