// The credit benchmark's training settings per method (README.md, "Tuning"): cpu-small's preset with the
// overrides in settings.json, which the validation grid (tune.ts) chose and which is committed before the
// held-out seeds run. Read and validated here, so a typo in the file is an error, not a silent default.
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { trainConfig, trainConfigSchema, type TrainConfig } from '../../trainer/presets.ts';

export const METHODS = ['rft', 'mtdpo', 'sweet', 'oracle', 'random'] as const;
export type Method = (typeof METHODS)[number];

const overridable = trainConfigSchema.pick({
  lr: true,
  sftEpochs: true,
  actorEpochs: true,
  criticLr: true,
  criticBeta: true,
  criticEpochs: true,
  criticTrajectoryScore: true,
  beta: true,
  pairGapQuantile: true,
  stateFraction: true,
  candidates: true,
  pairsPerState: true,
  nllCoefficient: true,
  rankingReference: true,
});
// The type of the schema below, which is this one without the preset's defaults.
const withDefaults = overridable.partial().strict();
/**
 * The overrides a method's settings may hold: what the grid searches, and the pair-gap filter. Only what is given:
 * the preset schema's defaults (rankingReference "sampler", pairGapQuantile 0) filled in here once overrode a choice
 * spread before them, so a SWEET-RL run asked to rank against the initial critic ranked against the sampler.
 */
export const overridesSchema = z
  .object(
    Object.fromEntries(
      Object.entries(overridable.shape).map(([k, v]) => [k, (v instanceof z.ZodDefault ? v.unwrap() : v).optional()]),
    ),
  )
  .strict() as unknown as typeof withDefaults;
export type Overrides = z.infer<typeof overridesSchema>;

const fileSchema = z
  .object({
    note: z.string(),
    chosenOn: z.string(),
    methods: z
      .object(Object.fromEntries(METHODS.map((m) => [m, overridesSchema])) as Record<Method, typeof overridesSchema>)
      .strict(),
  })
  .strict();
export type CreditSettings = z.infer<typeof fileSchema>;

export const SETTINGS_FILE = join(dirname(fileURLToPath(import.meta.url)), 'settings.json');

export function readSettings(file = SETTINGS_FILE): CreditSettings {
  const parsed = fileSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success)
    throw new Error(`${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

/**
 * A method's whole configuration: cpu-small, rehearsal off (it replays ColBench-mini games this starter never
 * saw), moves of at most 48 tokens, candidates at temperature 1, then the method's overrides.
 */
export function methodConfig(overrides: Overrides, seed: number, extra: Partial<TrainConfig> = {}): TrainConfig {
  return trainConfig('cpu-small', { rehearsal: null, maxNewTokens: 48, temperature: 1, seed, ...overrides, ...extra });
}
