import type { Command } from 'commander';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { assertProductionSecrets, isPublicSecret, privacySettings } from '../config-privacy.ts';
import { createLogger, type Logger } from '../log.ts';

/**
 * Chooses the tensor backend: the policy runs in this process, and with a SEED the repository ships no starter
 * for, the bot trains one first, which on tfjs's default pure-JS backend would take hours instead of minutes.
 */
async function chooseBackend(config: Config): Promise<void> {
  const { initBackend } = await import('../../trainer/model/backend.ts');
  await initBackend(config.TFJS_BACKEND);
}

/**
 * Says once, before anything else is printed, which tools sessions need are missing here, what that stops,
 * and the one command that installs them (the checks are `sweetloop doctor`'s). Nothing stops: what can work,
 * works. With LOG_FORMAT=json it is one structured warning instead.
 */
async function reportMissingTools(config: Config, log: Logger): Promise<void> {
  const { toolChecks, missingToolsSummary, installCommand } = await import('../doctor-tools.ts');
  const checks = await toolChecks(config);
  const asRoot = process.getuid?.() === 0;
  if (config.LOG_FORMAT === 'json') {
    const failed = checks.filter((c) => c.status === 'fail');
    if (failed.length) {
      log.warn(
        {
          missing: failed.map(({ name, detail, affects, fix }) => ({ name, detail, affects, fix })),
          install: installCommand(failed, asRoot),
        },
        'tools missing',
      );
    }
    return;
  }
  const text = missingToolsSummary(checks, asRoot);
  if (text) process.stderr.write(`\n${text}\n\n`);
}

/** The validated configuration with the backend chosen, and the missing-tools summary printed (both at once). */
async function prepare(
  channel: (config: Config) => 'discord' | 'console',
): Promise<{ config: Config; log: Logger; settings: import('../../bot/main.ts').BotSettings }> {
  const config = loadConfig();
  const ch = channel(config);
  // Before anything is prepared: a bot that cannot connect exits at once, saying why, instead of after migrating.
  if (ch === 'discord' && !config.DISCORD_TOKEN)
    throw new ConfigError([{ variable: 'DISCORD_TOKEN', message: 'is not set: the Discord bot needs its bot token' }]);
  // Before anything is migrated or served: a Discord bot collects real people's data.
  if (ch === 'discord') assertProductionSecrets(config);
  // The console shares the terminal with the logs: the default `info` becomes `warn` there; explicit debug stays.
  const log = createLogger(config, 'sweetloop', {
    level: ch === 'console' ? quieter(config.LOG_LEVEL) : config.LOG_LEVEL,
  });
  await Promise.all([chooseBackend(config), reportMissingTools(config, log)]);
  return { config, log, settings: await botSettings(config, ch) };
}

/** The bot's typed settings, from the validated configuration (the bot never reads the environment). */
async function botSettings(
  config: Config,
  channel: 'discord' | 'console',
): Promise<import('../../bot/main.ts').BotSettings> {
  return {
    databaseUrl: config.DATABASE_URL,
    pgliteDir: config.PGLITE_DIR,
    databasePoolSize: config.DATABASE_POOL_SIZE,
    policyModelDir: config.POLICY_MODEL_DIR,
    checkpointDir: config.CHECKPOINT_DIR,
    seed: config.SEED,
    localServe: {
      engine: config.LOCAL_SERVE_ENGINE,
      maxBatch: config.LOCAL_SERVE_MAX_BATCH,
      maxQueue: config.LOCAL_SERVE_MAX_QUEUE,
      logprobs: config.LOCAL_SERVE_LOGPROBS,
      ...(config.TFJS_BACKEND ? { backend: config.TFJS_BACKEND } : {}),
    },
    maxTurns: config.MAX_TURNS,
    sessionIdleMinutes: config.SESSION_IDLE_MINUTES,
    ratingWeight: config.REWARD_RATING_WEIGHT,
    bwrapPath: config.BWRAP_BIN,
    pythonPath: config.PYTHON_BIN,
    chromiumPath: config.CHROMIUM_PATH,
    scoringPool: config.SCORING_POOL_SIZE,
    consentText: channel === 'console' ? config.CONSOLE_CONSENT_TEXT : config.CONSENT_TEXT,
    exportSalt: config.EXPORT_SALT,
    exportDir: config.EXPORT_DIR,
    discord: config.DISCORD_TOKEN
      ? {
          token: config.DISCORD_TOKEN,
          apiBase: config.DISCORD_API_BASE,
          // `*`: any guild (assertProductionSecrets refused an allowlist left empty).
          guildIds: config.DISCORD_GUILD_IDS === '*' ? [] : config.DISCORD_GUILD_IDS,
          operatorIds: config.DISCORD_OPERATOR_IDS,
          operatorRoleIds: config.DISCORD_OPERATOR_ROLE_IDS,
          moderatorRoleIds: config.DISCORD_MODERATOR_ROLE_IDS,
        }
      : null,
    limits: {
      sessionsPerDay: config.LIMIT_SESSIONS_PER_DAY,
      messagesPerMinute: config.LIMIT_MESSAGES_PER_MINUTE,
      messageChars: config.LIMIT_MESSAGE_CHARS,
    },
    health: config.HEALTH_PORT ? { port: config.HEALTH_PORT, host: config.HEALTH_HOST } : null,
    dashboard: config.DASHBOARD_PORT ? { port: config.DASHBOARD_PORT, host: config.DASHBOARD_HOST } : null,
    shutdownDeadlineMs: config.SHUTDOWN_DEADLINE_SECONDS * 1000,
    privacy: privacySettings(config),
    exportSaltIsDefault: isPublicSecret(config.EXPORT_SALT),
  };
}

export function registerBotCommands(program: Command): void {
  program
    .command('start')
    .description(
      'Migrate the database, seed tasks, make sure a policy is deployed, then run the Discord bot (DISCORD_TOKEN set) or, in a terminal, the console',
    )
    .action(async () => {
      const { settings, log } = await prepare(startChannel);
      const { runStart } = await import('../../bot/main.ts');
      await runStart(settings, log);
    });
  program
    .command('bot')
    .description('Run the Discord bot (needs DISCORD_TOKEN)')
    .action(async () => {
      const { settings, log } = await prepare(() => 'discord');
      const { runDiscord } = await import('../../bot/main.ts');
      await runDiscord(settings, log);
    });
  program
    .command('console')
    .description('Run a collaboration session in this terminal (same engine as the bot)')
    .action(async () => {
      const { settings, log } = await prepare(() => 'console');
      const { runConsole } = await import('../../bot/main.ts');
      await runConsole(settings, log);
    });
}

/**
 * `start` runs the Discord bot with a token, else the console, which needs a person at a terminal: without one
 * (a service, a container) it would read end-of-input and exit 0 at once, and a restart policy would repeat that
 * forever, so it refuses, naming the missing token.
 */
function startChannel(config: Config): 'discord' | 'console' {
  if (config.DISCORD_TOKEN) return 'discord';
  if (process.stdin.isTTY) return 'console';
  throw new ConfigError([
    {
      variable: 'DISCORD_TOKEN',
      message:
        'is not set, and without a terminal there is no console to fall back to: set it to run the Discord bot, or run `sweetloop console` in a terminal',
    },
  ]);
}

function quieter(level: string): string {
  return level === 'info' ? 'warn' : level;
}
