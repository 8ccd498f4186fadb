// What guards people's data in the settings: production's secrets and what a deletion scans; bin/config.ts validates.
import { ConfigError, type Config } from './config.ts';

/**
 * Secret values that anyone can read in this repository, so none may key real people's pseudonyms or deletion
 * hashes or guard their database: the schema's default EXPORT_SALT, every example value shipped or once shipped
 * (docker-compose.yml passed `change-me-please` until it read the env file) and docker-compose.yml's default
 * POSTGRES_PASSWORD. test/bin/config.test.ts checks that every EXPORT_SALT, PRIVACY_KEY or POSTGRES_PASSWORD value
 * written in docker-compose.yml, .env.example and docs/ is in this list.
 */
export const PUBLIC_SECRETS: readonly string[] = ['sweetloop-dev-salt', 'change-me-please', 'sweetloop'];

/** The command a production deployment is told to make a secret with (also in docs/configuration.md). */
export const MAKE_SECRET_COMMAND = 'openssl rand -hex 32';

/** Whether a secret value is the development default or another value published in this repository. */
export function isPublicSecret(value: string): boolean {
  return PUBLIC_SECRETS.includes(value);
}

/** The password in a postgres:// URL (decoded), or null when it has none. */
export function databasePassword(url: string | undefined): string | null {
  if (!url) return null;
  try {
    const p = new URL(url).password;
    return p ? decodeURIComponent(p) : null;
  } catch {
    return null;
  }
}

/**
 * Production (DISCORD_TOKEN set: real people's data) needs its own secrets and says which guilds it serves: its
 * own EXPORT_SALT and PRIVACY_KEY (a missing or published one would let anyone with a person's Discord id reverse
 * their export pseudonym or deletion hash), no published database password (docker-compose.yml's default), and a
 * guild allowlist, or `*` for any guild said explicitly (an open bot lets whoever adds it to their server moderate
 * it and feed training). Throws a ConfigError naming each problem with its fix; a console or CLI run is not refused.
 */
export function assertProductionSecrets(
  config: Pick<Config, 'DISCORD_TOKEN' | 'EXPORT_SALT' | 'PRIVACY_KEY' | 'DATABASE_URL' | 'DISCORD_GUILD_IDS'>,
): void {
  if (!config.DISCORD_TOKEN) return;
  const fix = `make one with \`${MAKE_SECRET_COMMAND}\` (or \`node -e "console.log(require('node:crypto').randomBytes(32).toString('hex'))"\`) and set it in the environment or the env file`;
  const problems: { variable: string; message: string }[] = [];
  if (isPublicSecret(config.EXPORT_SALT))
    problems.push({ variable: 'EXPORT_SALT', message: `is a publicly known value while DISCORD_TOKEN is set; ${fix}` });
  if (config.PRIVACY_KEY === undefined)
    problems.push({ variable: 'PRIVACY_KEY', message: `is not set while DISCORD_TOKEN is set; ${fix}` });
  else if (isPublicSecret(config.PRIVACY_KEY))
    problems.push({ variable: 'PRIVACY_KEY', message: `is a publicly known value while DISCORD_TOKEN is set; ${fix}` });
  if (isPublicSecret(databasePassword(config.DATABASE_URL) ?? ''))
    problems.push({
      variable: 'DATABASE_URL',
      message: `its password is a publicly known value (docker-compose.yml's default POSTGRES_PASSWORD) while DISCORD_TOKEN is set; ${DATABASE_PASSWORD_FIX}`,
    });
  if (Array.isArray(config.DISCORD_GUILD_IDS) && config.DISCORD_GUILD_IDS.length === 0)
    problems.push({ variable: 'DISCORD_GUILD_IDS', message: GUILDS_FIX });
  if (problems.length) throw new ConfigError(problems);
}

/** How to replace a published database password (the postgres image sets it only when it first creates the database). */
export const DATABASE_PASSWORD_FIX = `set POSTGRES_PASSWORD in the env file to a secret of your own (\`${MAKE_SECRET_COMMAND}\`); on a database created before, also run \`docker compose exec postgres psql -U sweetloop -c "ALTER USER sweetloop PASSWORD '<the new one>'"\``;

/** What an empty guild allowlist lets happen, and the two ways out. */
export const GUILDS_FIX =
  'is empty while DISCORD_TOKEN is set: anyone who adds the bot to their server could moderate it there and feed training; list your guild ids (comma-separated), or set DISCORD_GUILD_IDS=* to serve any guild on purpose';

/**
 * What a person's deletion scans and what it never enters (bot/privacy.ts): export files under
 * PRIVACY_SCAN_DIRS lose their rows, found by session id or by their pseudonym under EXPORT_SALT; the folders of
 * model files (checkpoints, adapters, downloaded models) are never entered, even inside a scanned folder.
 */
export function privacySettings(
  config: Pick<
    Config,
    | 'PRIVACY_KEY'
    | 'EXPORT_SALT'
    | 'PRIVACY_SCAN_DIRS'
    | 'CHECKPOINT_DIR'
    | 'ADAPTERS_DIR'
    | 'MODELS_DIR'
    | 'POLICY_MODEL_DIR'
  >,
) {
  return {
    key: config.PRIVACY_KEY ?? config.EXPORT_SALT,
    dirs: config.PRIVACY_SCAN_DIRS,
    protectedDirs: [config.CHECKPOINT_DIR, config.ADAPTERS_DIR, config.MODELS_DIR, config.POLICY_MODEL_DIR].filter(
      (d): d is string => !!d,
    ),
    exportSalts: [config.EXPORT_SALT],
  };
}
