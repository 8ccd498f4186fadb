// The one configuration module. Every setting comes from the environment (or an optional .env file) and is
// validated here, once, at start; the rest of the code receives plain typed values and never reads
// process.env itself.
import { z } from 'zod';
import { config as loadDotenv } from 'dotenv';
import { DEFAULT_CHROMIUM_PATH } from '../tasks/render.ts';
import { DATA_SOURCES, DEFAULT_DATA_SOURCE } from '../prisma/data-source.ts';
import { DEFAULT_POOL_SIZE, MAX_POOL_SIZE } from '../prisma/pool-size.ts';
import { bool, csv, guildAllowlist, positiveInt, snowflake, unit } from './config-fields.ts';

export const configSchema = z.object({
  // --- database ---
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'expected a postgres:// or postgresql:// URL')
    .optional()
    .describe('Postgres connection URL. Unset: the embedded PGlite database under PGLITE_DIR.'),
  PGLITE_DIR: z.string().min(1).default('./data/pglite').describe('Where the embedded PGlite database persists.'),
  DATABASE_POOL_SIZE: positiveInt
    .max(MAX_POOL_SIZE, `expected at most ${MAX_POOL_SIZE} (Postgres's default max_connections)`)
    .default(DEFAULT_POOL_SIZE)
    .describe(
      "Most Postgres connections each Sweetloop process keeps (the bot, the trainer service, the dashboard, a command), plus one each for LISTEN. All of them together must stay under the server's max_connections (100 by default). Ignored by PGlite.",
    ),

  // --- logging ---
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('pino log level.'),
  LOG_FORMAT: z
    .enum(['pretty', 'json'], { message: 'expected pretty or json' })
    .default('pretty')
    .describe(
      'Logs on stderr: `pretty`, one readable line each (coloured on a terminal), or `json`, one pino JSON object a line for a log collector.',
    ),

  // --- tasks and evaluation ---
  PYTHON_BIN: z.string().default('/usr/bin/python3').describe('Python used inside the sandbox for backend tests.'),
  BWRAP_BIN: z
    .string()
    .default('/usr/bin/bwrap')
    .describe('bubblewrap executable; the backend evaluator refuses to run without it.'),
  CHROMIUM_PATH: z.string().default(DEFAULT_CHROMIUM_PATH).describe('Chromium used to render frontend pages.'),
  SCORING_POOL_SIZE: positiveInt
    .max(64, 'expected at most 64')
    .default(2)
    .describe(
      'Answers the bot scores at once (each a bubblewrap sandbox or a Chromium page); the others wait in arrival order and their people are told their place. About one per core.',
    ),
  CLIP_MODEL_DIR: z
    .string()
    .optional()
    .describe(
      "Local CLIP ViT-B/32 weights for the paper's frontend metric, used by simulate/evaluate/train scoring; live bot sessions use pixel-ssim-v1. Unset: pixel-ssim-v1 everywhere.",
    ),
  SIMULATOR_LLM_URL: z
    .string()
    .url('expected an http(s) URL')
    .optional()
    .describe('OpenAI-compatible chat endpoint for the LLM collaborator simulator.'),
  SIMULATOR_LLM_MODEL: z.string().optional().describe('Model name sent to SIMULATOR_LLM_URL.'),
  SIMULATOR_LLM_KEY: z.string().optional().describe('Bearer key for SIMULATOR_LLM_URL (never logged).'),
  ENV_SERVE_TOKEN: z
    .string()
    .min(16, 'expected at least 16 characters')
    .optional()
    .describe(
      'Bearer token every request to `sweetloop env serve` must carry (never logged); required to listen beyond loopback. Make one with `openssl rand -hex 32`.',
    ),

  // --- model and training ---
  TFJS_BACKEND: z
    .enum(['tensorflow', 'wasm', 'cpu'])
    .optional()
    .describe('Force a tfjs backend; fails loudly when unavailable.'),
  POLICY_MODEL_DIR: z
    .string()
    .optional()
    .describe('Hugging Face model directory of the initial policy. Unset: the built-in starter policy.'),
  LOCAL_SERVE_ENGINE: z
    .enum(['llama', 'tfjs'], { message: 'expected llama or tfjs' })
    .default('llama')
    .describe(
      'Engine of the OpenAI-compatible server the bot starts in its own process for checkpoint versions (see docs/serving-and-vllm.md): `llama` (llama.cpp, batched; falls back to tfjs, saying why once, when it cannot load) or `tfjs` (one request at a time).',
    ),
  LOCAL_SERVE_MAX_BATCH: positiveInt
    .max(1024, 'expected at most 1024')
    .default(32)
    .describe("Most sequences the bot's local server decodes together per checkpoint version."),
  LOCAL_SERVE_LOGPROBS: bool
    .default(false)
    .describe(
      'The bot asks its own server for per-token logprobs of every reply and stores them as provenance. Off: not asked for (provenance records "not requested"): the trainer recomputes its own, and llama.cpp then decodes without handing each token\'s whole distribution to JavaScript.',
    ),
  LOCAL_SERVE_MAX_QUEUE: z.coerce
    .number({ message: 'expected a number' })
    .int('expected an integer')
    .min(0, 'expected an integer >= 0')
    .default(256)
    .describe(
      "Requests waiting beyond the batch before the bot's local server answers 429 (the bot's chat client then retries).",
    ),
  CHECKPOINT_DIR: z
    .string()
    .default('./data/checkpoints')
    .describe('Where policy checkpoints and training state are written.'),
  ADAPTERS_DIR: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Where `sweetloop policy add NAME --adapter DIR` copies LoRA adapters; the vLLM server loads them from this path, so it must see it at the same path (same machine or a shared mount). Unset: CHECKPOINT_DIR/adapters.',
    ),
  MODELS_DIR: z
    .string()
    .min(1)
    .default('./data/models')
    .describe(
      'Where `sweetloop policy add NAME --gguf hf:OWNER/REPO/FILE.gguf` downloads GGUF models (once: a file already there is used as it is), as MODELS_DIR/OWNER/REPO/FILE.',
    ),
  HF_TOKEN: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Hugging Face access token, only for downloading gated or private GGUF models (`policy add --gguf hf:...`); never stored or logged.',
    ),
  VLLM_MAX_LORA_RANK: positiveInt
    .default(16)
    .describe(
      "Largest LoRA rank an endpoint version's server accepts (vLLM's --max-lora-rank, whose default is 16), unless the version records its own (`policy add|update --max-lora-rank`); adapters of a higher rank are refused.",
    ),
  SEED: z.coerce.number().int().default(1234).describe('Seed for the starter policy and generators.'),
  REWARD_RATING_WEIGHT: unit
    .default(0)
    .describe('Weight of the human rating in the reward (0 = evaluation score only).'),
  PROMOTION_ALPHA: z.coerce
    .number({ message: 'expected a number' })
    .gt(0, 'expected a number in (0, 0.5)')
    .lt(0.5, 'expected a number in (0, 0.5)')
    .default(0.05)
    .describe(
      "Significance level of the promotion gate's paired tests: a candidate is deployed only when it plays the same held-out games significantly better than the deployed version.",
    ),
  PROMOTION_MARGIN: unit
    .default(0)
    .describe(
      'Non-inferiority margin of the promotion gate on the score (fraction of tests passed / similarity): > 0 also deploys a candidate whose one-sided (1 - alpha) lower bound of the score difference is above -margin. 0: the candidate must be better.',
    ),
  PROMOTION_EFFECT: z.coerce
    .number({ message: 'expected a number' })
    .gt(0, 'expected a number in (0, 1)')
    .lt(1, 'expected a number in (0, 1)')
    .default(0.1)
    .describe(
      'Difference in success rate the promotion gate should detect; sets its number of games (unless --eval-episodes is given) by a power analysis of the paired success comparison.',
    ),
  PROMOTION_POWER: z.coerce
    .number({ message: 'expected a number' })
    .gt(0, 'expected a number in (0, 1)')
    .lt(1, 'expected a number in (0, 1)')
    .default(0.8)
    .describe("Power the promotion gate's games count is chosen for (with PROMOTION_EFFECT and PROMOTION_ALPHA)."),
  PROMOTION_HUMAN_AB_SHARE: z.coerce
    .number({ message: 'expected a number' })
    .int('expected a whole percent')
    .min(0, 'expected a percent from 0 to 99')
    .max(99, 'expected a percent from 0 to 99')
    .default(0)
    .describe(
      'Promote only after a human A/B: a candidate that passes the promotion gate is not deployed but starts an A/B experiment with people as the arms of the default study, with this percent of the sessions of each task on it, ended by an operator with `/mod experiment stop` or `sweetloop study arms stop` (promote or discard); while an experiment runs there, the candidate is only kept. 0: deploy on the gate alone.',
    ),
  TRAINER_MIN_NEW_SESSIONS: positiveInt
    .default(20)
    .describe(
      'New training sessions the trainer service waits for before a run: answered and scored, of its task kind, selected by TRAINER_DATA and the other TRAINER_* filters (a rating is needed only with TRAINER_MIN_RATING).',
    ),
  TRAINER_POLL_SECONDS: positiveInt.default(60).describe('How often the trainer service looks for new data.'),
  TRAINER_MAX_BACKOFF_SECONDS: positiveInt
    .default(3600)
    .describe(
      'Longest wait of the trainer service after failing training cycles: the wait doubles from TRAINER_POLL_SECONDS with each failure in a row, up to this; its readiness is failing meanwhile.',
    ),
  TRAINER_LORA_RANK: positiveInt
    .default(16)
    .describe(
      "Rank of the fresh LoRA adapter the trainer service trains when the deployed version is served by an endpoint with a base model directory (alpha 2 x rank); it must not pass the server's largest rank (the endpoint version's, else VLLM_MAX_LORA_RANK), or the service reports that it cannot train. A deployed adapter is continued at its own rank.",
    ),
  TRAINER_DATA: z
    .enum(DATA_SOURCES)
    .default(DEFAULT_DATA_SOURCE)
    .describe(
      'Which sessions training runs use unless `sweetloop train --data` says otherwise: people only, simulated collaborators only, or both.',
    ),
  TRAINER_SIMULATED_WEIGHT: z.coerce
    .number({ message: 'expected a number' })
    .gt(0, 'expected a number in (0, 1]')
    .max(1, 'expected a number in (0, 1]')
    .default(1)
    .describe(
      'With TRAINER_DATA=both: the share of simulated sessions kept (each one in or out by a fixed seeded draw); 1 keeps them all.',
    ),
  TRAINER_MIN_QUALITY: unit
    .optional()
    .describe(
      'Leave out the sessions of people whose collaborator-quality score (0-1, see /mod participants) is below this. Unset: no threshold.',
    ),
  TRAINER_USE_PREFERENCES: bool
    .default(true)
    .describe(
      "SWEET-RL runs: people's pairwise preferences (`/compare`) between two sessions of the run's data are extra Bradley-Terry pairs for the critic, unless `sweetloop train --no-preferences`. Without any stored, nothing changes.",
    ),
  TRAINER_MIN_RATING: z.coerce
    .number({ message: 'expected a number' })
    .min(1, 'expected a number from 1 to 5')
    .max(5, 'expected a number from 1 to 5')
    .optional()
    .describe('Leave out human sessions rated below this (and unrated ones). Unset: no threshold.'),
  TRAINER_STUDY: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Train only on the answered sessions of the study of this name (`sweetloop train --study` overrides it for one run). The trainer service refuses to start when no study has that name or when it is an evaluation study (`--split test`). Unset: every study.',
    ),

  // --- bot ---
  DISCORD_TOKEN: z
    .string()
    .min(1)
    .optional()
    .describe('Bot token (never logged). Unset: `npm start` runs the console channel.'),
  DISCORD_GUILD_IDS: guildAllowlist
    .default([])
    .describe(
      'Comma-separated guild ids: the allowlist. Commands are registered in these guilds only; the bot ignores every other guild and leaves it, whether it was there at start or joins later. `*`: any guild, commands registered globally (whoever adds the bot to their server can moderate it there and feed training; `sweetloop doctor` warns). Unset: a Discord bot refuses to start.',
    ),
  DISCORD_OPERATOR_IDS: csv
    .pipe(z.array(snowflake))
    .default([])
    .describe(
      "Comma-separated user ids of operators: they may deploy, roll back, pause, run experiments, ban everywhere and export every guild's sessions. With neither this nor DISCORD_OPERATOR_ROLE_IDS set nobody can do those on Discord (`sweetloop doctor` warns).",
    ),
  DISCORD_OPERATOR_ROLE_IDS: csv
    .pipe(z.array(snowflake))
    .default([])
    .describe('Comma-separated role ids whose members are operators (in any allowed guild).'),
  DISCORD_MODERATOR_ROLE_IDS: csv
    .pipe(z.array(snowflake))
    .default([])
    .describe(
      'Comma-separated role ids whose members moderate their guild (besides members with Manage Server): statistics, export, flags and bans within that guild.',
    ),
  LIMIT_SESSIONS_PER_DAY: positiveInt.default(20).describe('Sessions one person may start in any 24 hours.'),
  LIMIT_MESSAGES_PER_MINUTE: positiveInt.default(6).describe('Replies one person may send in any minute.'),
  LIMIT_MESSAGE_CHARS: positiveInt
    .default(1000)
    .describe(
      "Characters in one reply (the protocol's caps per task kind, 400 backend and 1000 frontend, apply too; the lower wins).",
    ),
  HEALTH_PORT: z.coerce
    .number({ message: 'expected a port number' })
    .int()
    .min(0)
    .max(65535)
    .default(9464)
    .describe("Port of the bot's /health/live, /health/ready and /metrics (Prometheus) endpoints; 0: off."),
  HEALTH_HOST: z
    .string()
    .default('127.0.0.1')
    .describe(
      "Address the bot's and the trainer service's health and metrics endpoints listen on (they need no token): this machine only unless set, which is where docker-compose.yml's health checks ask, inside each container. `0.0.0.0` (or an interface's address) for a Prometheus on another host.",
    ),
  DASHBOARD_PORT: z.coerce
    .number({ message: 'expected a port number' })
    .int()
    .min(0)
    .max(65535)
    .default(0)
    .describe(
      'Port of the dashboard that `npm start` serves beside the bot or console (bot/dashboard/); 0: not served (`sweetloop dashboard` serves it on its own, on 8080 by default).',
    ),
  DASHBOARD_HOST: z
    .string()
    .default('127.0.0.1')
    .describe(
      'Address the dashboard listens on. Loopback: it prints a login link once at start (as Jupyter does), whose bearer is an operator; every other request gets 401. Any other address: every request needs a token (`sweetloop dashboard token create`), and the dashboard refuses to listen while none exists.',
    ),
  TRAINER_HEALTH_PORT: z.coerce
    .number({ message: 'expected a port number' })
    .int()
    .min(0)
    .max(65535)
    .default(9465)
    .describe(
      "Port of the trainer service's /health/live, /health/ready (database reachable, and the service can train what is deployed with no failing cycle; the reason when not) and /metrics (sweetloop_trainer_state among them); 0: off.",
    ),
  PRIVACY_KEY: z
    .string()
    .min(16, 'expected at least 16 characters')
    .optional()
    .describe(
      'Secret of the keyed hash that stands for a deleted person (so a ban still applies without their id; never logged). Unset: EXPORT_SALT is used, except with DISCORD_TOKEN set, where the bot refuses to start without its own (`openssl rand -hex 32`).',
    ),
  PRIVACY_SCAN_DIRS: csv
    .default(['./data/exports', './data/console'])
    .describe(
      "Comma-separated folders whose export files (JSON Lines, Parquet) lose a deleted person's rows, found by session id or pseudonym, on /privacy delete and `sweetloop privacy delete`. No file is deleted; CHECKPOINT_DIR, ADAPTERS_DIR, MODELS_DIR and POLICY_MODEL_DIR are never entered, even inside these.",
    ),
  SHUTDOWN_DEADLINE_SECONDS: positiveInt
    .default(30)
    .describe(
      'On SIGTERM the bot stops taking new turns, finishes those in flight and exits within this many seconds, whatever is unreachable.',
    ),
  DISCORD_API_BASE: z
    .string()
    .url('expected an http(s) URL')
    .default('https://discord.com/api')
    .describe('REST base URL handed to discord.js (a proxy or a local server).'),
  SESSION_IDLE_MINUTES: positiveInt.default(30).describe('An active session with no activity for this long expires.'),
  MAX_TURNS: positiveInt.max(50).default(10).describe('Agent turns per session (ColBench: 10).'),
  CONSENT_TEXT: z
    .string()
    .default(
      'Sweetloop records this conversation, your ratings and your Discord id (pseudonymised in exports) to train and evaluate collaborative AI agents. You can withdraw at any time with /privacy delete, which removes your data.',
    )
    .describe("Shown before a person's first session on Discord; they must accept it."),
  CONSOLE_CONSENT_TEXT: z
    .string()
    .default(
      "Sweetloop records this conversation and your ratings, under your user name on this computer (pseudonymised in exports), to train and evaluate collaborative AI agents. They stay in this installation's database until its operator exports or deletes them.",
    )
    .describe(
      'Shown before the first console session (`npm start` without DISCORD_TOKEN, `sweetloop console`); it must be accepted.',
    ),

  // --- exports ---
  EXPORT_DIR: z
    .string()
    .default('./data/exports')
    .describe(
      'Where `/mod export` writes exports too large to attach to a Discord message (the moderator is told the path).',
    ),
  EXPORT_SALT: z
    .string()
    .min(8, 'expected at least 8 characters')
    .default('sweetloop-dev-salt')
    .describe(
      'Salt for participant pseudonyms in exports. With DISCORD_TOKEN set the bot refuses to start on this default or any other value published in the repository (bin/config-privacy.ts PUBLIC_SECRETS): make one with `openssl rand -hex 32`.',
    ),
});

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  constructor(readonly problems: { variable: string; message: string }[]) {
    // One problem is one line: a container's log shows it whole, and the line names the variable.
    super(
      problems.length === 1
        ? `Invalid configuration: ${problems[0]!.variable}: ${problems[0]!.message} (docs/configuration.md)`
        : 'Invalid configuration:\n' +
            problems.map((p) => `  ${p.variable}: ${p.message}`).join('\n') +
            '\nSee the configuration table in docs/configuration.md.',
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
