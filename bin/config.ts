// The one configuration module. Every setting comes from the environment (or an optional .env file) and is
// validated here, once, at start; the rest of the code receives plain typed values and never reads
// process.env itself.
import { z } from 'zod';
import { config as loadDotenv } from 'dotenv';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'expected true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const csv = z.string().transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean));
const snowflake = z.string().regex(/^\d{17,20}$/, 'expected a Discord snowflake (17-20 digits)');
const positiveInt = z.coerce.number({ message: 'expected a number' }).int('expected an integer').positive('expected a positive integer');
const nonNegative = z.coerce.number({ message: 'expected a number' }).min(0, 'expected a number >= 0');
const unit = z.coerce.number({ message: 'expected a number' }).min(0, 'expected a number in [0, 1]').max(1, 'expected a number in [0, 1]');

export const configSchema = z.object({
  // --- database ---
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'expected a postgres:// or postgresql:// URL')
    .optional()
    .describe('Postgres connection URL. Unset: the embedded PGlite database under PGLITE_DIR.'),
  PGLITE_DIR: z.string().min(1).default('./data/pglite').describe('Where the embedded PGlite database persists.'),

  // --- logging ---
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('pino log level.'),

  // --- tasks and evaluation ---
  PYTHON_BIN: z.string().default('/usr/bin/python3').describe('Python used inside the sandbox for backend tests.'),
  BWRAP_BIN: z.string().default('/usr/bin/bwrap').describe('bubblewrap executable; the backend evaluator refuses to run without it.'),
  CHROMIUM_PATH: z.string().default('/usr/bin/chromium').describe('Chromium used to render frontend pages.'),
  CLIP_MODEL_DIR: z.string().optional().describe('Local CLIP ViT-B/32 weights for the paper\'s frontend metric, used by simulate/evaluate/train scoring; live bot sessions use pixel-ssim-v1. Unset: pixel-ssim-v1 everywhere.'),
  SIMULATOR_LLM_URL: z.string().url('expected an http(s) URL').optional().describe('OpenAI-compatible chat endpoint for the LLM collaborator simulator.'),
  SIMULATOR_LLM_MODEL: z.string().optional().describe('Model name sent to SIMULATOR_LLM_URL.'),
  SIMULATOR_LLM_KEY: z.string().optional().describe('Bearer key for SIMULATOR_LLM_URL (never logged).'),

  // --- model and training ---
  TFJS_BACKEND: z.enum(['tensorflow', 'wasm', 'cpu']).optional().describe('Force a tfjs backend; fails loudly when unavailable.'),
  POLICY_MODEL_DIR: z.string().optional().describe('Hugging Face model directory of the initial policy. Unset: the built-in starter policy.'),
  CHECKPOINT_DIR: z.string().default('./data/checkpoints').describe('Where policy checkpoints and training state are written.'),
  SEED: z.coerce.number().int().default(1234).describe('Seed for the starter policy and generators.'),
  REWARD_RATING_WEIGHT: unit.default(0).describe('Weight of the human rating in the reward (0 = evaluation score only).'),
  PROMOTION_MARGIN: z.coerce.number().default(0).describe('A candidate is deployed if its score >= deployed score - margin.'),
  TRAINER_MIN_NEW_SESSIONS: positiveInt.default(20).describe('New rated sessions the trainer service waits for before a run.'),
  TRAINER_POLL_SECONDS: positiveInt.default(60).describe('How often the trainer service looks for new data.'),

  // --- bot ---
  DISCORD_TOKEN: z.string().min(1).optional().describe('Bot token (never logged). Unset: `npm start` runs the console channel.'),
  DISCORD_APPLICATION_ID: snowflake.optional().describe('Application id, needed to register slash commands.'),
  DISCORD_GUILD_IDS: csv.pipe(z.array(snowflake)).default([]).describe('Comma-separated guild ids: commands are registered per guild (instant) instead of globally.'),
  DISCORD_API_BASE: z.string().url('expected an http(s) URL').default('https://discord.com/api').describe('REST base URL handed to discord.js (a proxy or a local server).'),
  SESSION_IDLE_MINUTES: positiveInt.default(30).describe('An active session with no activity for this long expires.'),
  MAX_TURNS: positiveInt.max(50).default(10).describe('Agent turns per session (ColBench: 10).'),
  CONSENT_TEXT: z
    .string()
    .default(
      'Sweetloop records this conversation, your ratings and your Discord id (pseudonymised in exports) to train and evaluate collaborative AI agents. You can withdraw at any time with /privacy delete, which removes your data.',
    )
    .describe('Shown before a person\'s first session; they must accept it.'),

  // --- exports ---
  EXPORT_SALT: z.string().min(8, 'expected at least 8 characters').default('sweetloop-dev-salt').describe('Salt for participant pseudonyms in exports (set your own in production).'),
});

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  constructor(readonly problems: { variable: string; message: string }[]) {
    super(
      'Invalid configuration:\n' +
        problems.map((p) => `  ${p.variable}: ${p.message}`).join('\n') +
        '\nSee the configuration table in README.md.',
    );
    this.name = 'ConfigError';
  }
}

/** Validates an environment. Empty strings count as unset, as they do in most .env files. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const cleaned: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '') cleaned[k] = v;
  const result = configSchema.safeParse(cleaned);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => ({ variable: String(issue.path[0] ?? '?'), message: issue.message })),
    );
  }
  return result.data;
}

/** Reads .env (if present, never overriding the real environment) and validates process.env. */
export function loadConfig(): Config {
  loadDotenv({ quiet: true });
  return parseConfig(process.env);
}

/** Name, default and description of every variable, for the README table and `sweetloop doctor`. */
export function describeConfig(): { variable: string; default: string; description: string }[] {
  return Object.entries(configSchema.shape).map(([variable, schema]) => {
    let def = '';
    const parsed = (schema as z.ZodType).safeParse(undefined);
    if (parsed.success && parsed.data !== undefined) def = JSON.stringify(parsed.data);
    return { variable, default: def, description: (schema as z.ZodType).description ?? '' };
  });
}
