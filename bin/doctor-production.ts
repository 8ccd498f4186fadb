// `sweetloop doctor`'s checks of a production deployment (DISCORD_TOKEN set: real people's data): the Discord token
// (its form, then Discord's answer to it), every registered endpoint version (its server's GET /models lists its
// model), that operators are named (without one nobody can deploy or run an A/B from Discord), which guilds the bot
// serves, and that the export salt, the privacy key and the database password are not values published in this
// repository. One line each; bin/doctor.ts runs them.
import type { Config } from './config.ts';
import {
  databasePassword,
  DATABASE_PASSWORD_FIX,
  GUILDS_FIX,
  isPublicSecret,
  MAKE_SECRET_COMMAND,
} from './config-privacy.ts';

/** One check's verdict, as `sweetloop doctor` prints it (bin/doctor.ts runs these and the machine's own). */
export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface CheckResult {
  name: string;
  status: CheckStatus;
  detail: string;
  /** One line: what to do about a warn/fail. */
  fix?: string;
  /** The Debian package that fixes a fail by being installed (absent when installing is not the fix). */
  apt?: string;
  /** What does not work while this check fails. */
  affects?: string;
}

/**
 * A bot token's form: three dot-separated base64url parts, the first the bot's user id (a snowflake) in base64.
 * Returns the bot's id, or why the text is not a token.
 */
export function tokenShape(token: string): { botId: string } | { problem: string } {
  const parts = token.trim().split('.');
  if (token !== token.trim()) return { problem: 'it has spaces or a line break around it' };
  if (/^Bot\s/i.test(token)) return { problem: 'it starts with "Bot ": give the token alone' };
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p)))
    return { problem: 'a bot token is three base64url parts joined by dots (Developer Portal, Bot, Reset Token)' };
  const id = Buffer.from(parts[0]!, 'base64url').toString('utf8');
  if (!/^\d{17,20}$/.test(id))
    return {
      problem: 'its first part is not a bot id in base64: this is not a bot token (a client secret or an OAuth token?)',
    };
  return { botId: id };
}

export async function checkDiscordToken(
  config: Pick<Config, 'DISCORD_TOKEN' | 'DISCORD_API_BASE'>,
  timeoutMs = 10_000,
): Promise<CheckResult> {
  const name = 'discord token';
  const fix = 'copy the token again from the Developer Portal (Bot, Reset Token) into DISCORD_TOKEN';
  const token = config.DISCORD_TOKEN ?? '';
  const shape = tokenShape(token);
  if ('problem' in shape) return { name, status: 'fail', detail: `DISCORD_TOKEN is malformed: ${shape.problem}`, fix };
  const url = `${config.DISCORD_API_BASE.replace(/\/+$/, '')}/v10/users/@me`;
  let res: Response;
  try {
    res = await fetch(url, { headers: { authorization: `Bot ${token}` }, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    return {
      name,
      status: 'warn',
      detail: `well formed (bot ${shape.botId}), but ${url} could not be reached: ${(err as Error).message}`,
      fix: 'check the network or DISCORD_API_BASE, then run the doctor again',
    };
  }
  if (res.status === 401)
    return { name, status: 'fail', detail: `Discord refused it (401 at ${url}): reset, revoked or mistyped`, fix };
  if (!res.ok)
    return {
      name,
      status: 'warn',
      detail: `well formed (bot ${shape.botId}), but ${url} answered ${res.status}`,
      fix: 'run the doctor again later',
    };
  const me = (await res.json().catch(() => ({}))) as { id?: string; username?: string };
  return { name, status: 'ok', detail: `Discord accepts it: bot ${me.username ?? '?'} (${me.id ?? shape.botId})` };
}

export function checkOperators(
  config: Pick<Config, 'DISCORD_OPERATOR_IDS' | 'DISCORD_OPERATOR_ROLE_IDS'>,
): CheckResult {
  const ids = config.DISCORD_OPERATOR_IDS.length;
  const roles = config.DISCORD_OPERATOR_ROLE_IDS.length;
  if (ids + roles > 0)
    return { name: 'operators', status: 'ok', detail: `${ids} operator id(s), ${roles} operator role(s)` };
  return {
    name: 'operators',
    status: 'warn',
    detail:
      'none configured: nobody can deploy, roll back, pause, start or stop an A/B test, or act on every guild from Discord',
    fix: 'set DISCORD_OPERATOR_IDS (your Discord user id) or DISCORD_OPERATOR_ROLE_IDS',
  };
}

/** The guild allowlist: empty is refused at start, `*` (any guild) works but is worth a warning. */
export function checkGuilds(config: Pick<Config, 'DISCORD_GUILD_IDS'>): CheckResult {
  const ids = config.DISCORD_GUILD_IDS;
  if (ids === '*') {
    return {
      name: 'guilds',
      status: 'warn',
      detail:
        'DISCORD_GUILD_IDS=*: any server the bot is added to is served; its moderators can moderate there and its people feed training',
      fix: 'list the guild ids you run studies in (comma-separated) in DISCORD_GUILD_IDS',
    };
  }
  if (!ids.length)
    return {
      name: 'guilds',
      status: 'fail',
      detail: `DISCORD_GUILD_IDS ${GUILDS_FIX} (the bot refuses to start)`,
      fix: 'set DISCORD_GUILD_IDS to your guild ids, or to * on purpose',
    };
  return { name: 'guilds', status: 'ok', detail: `${ids.length} guild(s) allowed; the bot leaves any other` };
}

export function checkSecrets(config: Pick<Config, 'EXPORT_SALT' | 'PRIVACY_KEY' | 'DATABASE_URL'>): CheckResult[] {
  const fix = (v: string) => `set ${v} to a secret of your own: \`${MAKE_SECRET_COMMAND}\``;
  const salt: CheckResult = isPublicSecret(config.EXPORT_SALT)
    ? {
        name: 'export salt',
        status: 'fail',
        detail:
          'EXPORT_SALT is a value published in this repository: export pseudonyms could be reversed (the bot refuses to start)',
        fix: fix('EXPORT_SALT'),
      }
    : { name: 'export salt', status: 'ok', detail: 'EXPORT_SALT is not a published value' };
  const key: CheckResult =
    config.PRIVACY_KEY === undefined
      ? {
          name: 'privacy key',
          status: 'fail',
          detail: 'PRIVACY_KEY is not set (the bot refuses to start)',
          fix: fix('PRIVACY_KEY'),
        }
      : isPublicSecret(config.PRIVACY_KEY)
        ? {
            name: 'privacy key',
            status: 'fail',
            detail:
              'PRIVACY_KEY is a value published in this repository: deletion hashes could be reversed (the bot refuses to start)',
            fix: fix('PRIVACY_KEY'),
          }
        : { name: 'privacy key', status: 'ok', detail: 'PRIVACY_KEY is set and not a published value' };
  const password = databasePassword(config.DATABASE_URL);
  const database: CheckResult =
    password !== null && isPublicSecret(password)
      ? {
          name: 'database password',
          status: 'fail',
          detail:
            "DATABASE_URL's password is a value published in this repository (docker-compose.yml's default POSTGRES_PASSWORD) (the bot refuses to start)",
          fix: DATABASE_PASSWORD_FIX,
        }
      : {
          name: 'database password',
          status: 'ok',
          detail: config.DATABASE_URL
            ? password === null
              ? 'DATABASE_URL has no password (the server authenticates otherwise)'
              : "DATABASE_URL's password is not a published value"
            : 'no DATABASE_URL: the embedded PGlite database',
        };
  return [salt, key, database];
}

export interface EndpointToCheck {
  name: string;
  url: string;
  model: string;
  apiKeyEnv: string | null;
}

/** Each endpoint version's server is asked GET /models; one line per version. */
export async function checkEndpoints(endpoints: readonly EndpointToCheck[]): Promise<CheckResult[]> {
  if (endpoints.length === 0)
    return [
      {
        name: 'endpoints',
        status: 'ok',
        detail: 'no endpoint versions registered (`sweetloop policy add --endpoint` adds one)',
      },
    ];
  const { checkServesModel } = await import('../trainer/policies/registry.ts');
  return Promise.all(
    endpoints.map(async (e): Promise<CheckResult> => {
      const name = `endpoint ${e.name}`;
      try {
        await checkServesModel(e.url, e.model, e.apiKeyEnv);
        return { name, status: 'ok', detail: `${e.url} serves ${e.model}` };
      } catch (err) {
        return {
          name,
          status: 'fail',
          detail: (err as Error).message,
          fix: `start the server, or move the version with \`sweetloop policy update ${e.name} --endpoint URL\`, or take it out with \`sweetloop policy remove ${e.name}\``,
        };
      }
    }),
  );
}

/** The endpoint versions in service (not removed), read from the database. */
export async function registeredEndpoints(
  config: Pick<Config, 'DATABASE_URL' | 'PGLITE_DIR' | 'DATABASE_POOL_SIZE'>,
): Promise<EndpointToCheck[]> {
  const [{ openDatabase }, { servingOf }] = await Promise.all([
    import('../prisma/db.ts'),
    import('../trainer/policies/serving.ts'),
  ]);
  const db = await openDatabase({
    databaseUrl: config.DATABASE_URL,
    pgliteDir: config.PGLITE_DIR,
    poolSize: config.DATABASE_POOL_SIZE,
  });
  try {
    const versions = await db.prisma.policyVersion.findMany({
      where: { kind: 'endpoint', status: { not: 'removed' } },
      orderBy: { createdAt: 'asc' },
    });
    return versions.map((v) => {
      const s = servingOf(v);
      return { name: v.name, url: s.url, model: s.model, apiKeyEnv: s.apiKeyEnv ?? null };
    });
  } finally {
    await db.close();
  }
}
