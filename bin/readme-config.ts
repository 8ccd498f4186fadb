// Regenerates the configuration table of docs/configuration.md and the .env.example file from bin/config.ts
// (`npm run readme:config`), so neither can disagree with the schema; test/readme.test.ts fails when they do.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { z } from 'zod';
import { configSchema } from './config.ts';
import { MAKE_SECRET_COMMAND } from './config-privacy.ts';

/** The env file template, relative to the repository root. */
export const ENV_EXAMPLE = '.env.example';

/**
 * Variables docker-compose.yml reads that no Sweetloop process does (they configure Postgres and the vLLM
 * container). test/docker.test.ts allows the compose file these and the schema's variables only, and checks the
 * defaults written there against these.
 */
export const COMPOSE_VARIABLES: readonly { variable: string; default: string; description: string }[] = [
  {
    variable: 'POSTGRES_PASSWORD',
    default: 'sweetloop',
    description:
      "Password of the compose Postgres (user and database sweetloop); it never leaves the compose network. The default is published here, so a Discord bot refuses to start with it (bin/config-privacy.ts PUBLIC_SECRETS): set your own (`openssl rand -hex 32`); the postgres image sets it only when it first creates the database, so on an existing one also run `ALTER USER sweetloop PASSWORD '...'`.",
  },
  {
    variable: 'DASHBOARD_PUBLISHED_PORT',
    default: '8080',
    description:
      'Host port of the `dashboard` profile\'s dashboard, published on 127.0.0.1 only (inside its container DASHBOARD_PORT is 8080 and DASHBOARD_HOST 0.0.0.0, so a token is needed: README, "The dashboard").',
  },
  {
    variable: 'VLLM_MODEL_DIR',
    default: './models/policy',
    description:
      'Host directory of the Hugging Face model the `vllm` profile serves, mounted read-only at /models/policy.',
  },
  {
    variable: 'VLLM_SERVED_MODEL_NAME',
    default: 'policy',
    description: 'Model name vLLM answers to (`policy add NAME --endpoint http://vllm:8000/v1 --model` this).',
  },
  { variable: 'VLLM_MAX_LORAS', default: '4', description: 'LoRA adapters vLLM keeps loaded at once (--max-loras).' },
  { variable: 'VLLM_MAX_MODEL_LEN', default: '8192', description: 'Context window vLLM serves (--max-model-len).' },
  {
    variable: 'VLLM_GPU_MEMORY_UTILIZATION',
    default: '0.9',
    description:
      "Share of the GPU's memory vLLM takes (--gpu-memory-utilization); lower it when the trainer shares the GPU.",
  },
  {
    variable: 'VLLM_API_KEY',
    default: '',
    description:
      'Key vLLM requires of clients (it reads this variable itself); register the endpoint with `--api-key-env VLLM_API_KEY` so the bot sends it. Empty: no key.',
  },
  {
    variable: 'COMPOSE_FILE',
    default: 'docker-compose.yml',
    description:
      "Compose's own variable: the files `docker compose` reads. `docker-compose.yml:docker-compose.gpu.yml` runs the trainer on an NVIDIA GPU (docs/docker.md).",
  },
  {
    variable: 'BUILD_NETWORK',
    default: 'default',
    description:
      'Network the image builds run on (`host` where the Docker daemon has no NAT for its bridge network, e.g. started with --iptables=false).',
  },
  {
    variable: 'BUILD_CA_CERT',
    default: '/dev/null',
    description:
      'PEM file of extra CA certificates npm must trust while the images build (a TLS-intercepting proxy); handed to the builds as a secret, not kept in the images. /dev/null: none.',
  },
];

/** A schema default as an env file writes it: lists comma-separated, everything else as its text. */
function envValue(variable: string): string {
  const parsed = (
    configSchema.shape as Record<string, { safeParse(v: unknown): { success: boolean; data?: unknown } }>
  )[variable]!.safeParse(undefined);
  if (!parsed.success || parsed.data === undefined) return '';
  return Array.isArray(parsed.data) ? parsed.data.join(',') : String(parsed.data);
}

/** The whole .env.example: every setting commented out at its default, with its meaning. */
export function envExample(): string {
  const entry = (description: string, line: string) => `# ${description.replace(/\n/g, ' ')}\n${line}\n`;
  return [
    '# Sweetloop settings. Generated from bin/config.ts by `npm run readme:config` (test/readme.test.ts fails when',
    '# stale); docs/configuration.md explains them. Copy to .env and uncomment what you change: `sweetloop` reads',
    '# .env from its working directory, and docker compose reads it for the compose file and passes it to every',
    '# service. A Discord deployment (DISCORD_TOKEN set) refuses to start without its own EXPORT_SALT, PRIVACY_KEY and',
    `# (with docker compose) POSTGRES_PASSWORD: make each with \`${MAKE_SECRET_COMMAND}\`; and without DISCORD_GUILD_IDS (or *).`,
    '',
    ...describeConfig().map((r) => entry(r.description, `# ${r.variable}=${envValue(r.variable)}`)),
    '# --- docker-compose.yml only ---',
    '',
    ...COMPOSE_VARIABLES.map((r) => entry(r.description, `# ${r.variable}=${r.default}`)),
  ].join('\n');
}

/** The guide that holds the table, relative to the repository root. */
export const CONFIG_DOC = 'docs/configuration.md';

export const TABLE_START = '<!-- config-table:start (generated by `npm run readme:config`) -->';
export const TABLE_END = '<!-- config-table:end -->';

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function configTable(): string {
  const rows = describeConfig().map(
    (r) => `| \`${r.variable}\` | ${r.default ? `\`${cell(r.default)}\`` : '(unset)'} | ${cell(r.description)} |`,
  );
  return ['| Variable | Default | Meaning |', '| --- | --- | --- |', ...rows].join('\n');
}

export function withConfigTable(doc: string): string {
  const a = doc.indexOf(TABLE_START);
  const b = doc.indexOf(TABLE_END);
  if (a < 0 || b < a) throw new Error(`${CONFIG_DOC} has no ${TABLE_START} ... ${TABLE_END} block`);
  return `${doc.slice(0, a + TABLE_START.length)}\n${configTable()}\n${doc.slice(b)}`;
}

/** Name, default and description of every variable, for the table in docs/configuration.md and `sweetloop doctor`. */
export function describeConfig(): { variable: string; default: string; description: string }[] {
  return Object.entries(configSchema.shape).map(([variable, schema]) => {
    let def = '';
    const parsed = (schema as z.ZodType).safeParse(undefined);
    if (parsed.success && parsed.data !== undefined) def = JSON.stringify(parsed.data);
    return { variable, default: def, description: (schema as z.ZodType).description ?? '' };
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const path = join(dirname(fileURLToPath(import.meta.url)), '..', CONFIG_DOC);
  writeFileSync(path, withConfigTable(readFileSync(path, 'utf8')));
  const env = join(dirname(fileURLToPath(import.meta.url)), '..', ENV_EXAMPLE);
  writeFileSync(env, envExample());
  console.log(`updated the configuration table in ${path} and ${env}`);
}
