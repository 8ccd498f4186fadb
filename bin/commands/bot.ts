import type { Command } from 'commander';
import { loadConfig, type Config } from '../config.ts';
import { createLogger } from '../log.ts';

/**
 * The validated configuration, with the tensor backend chosen: on a first run the bot process itself trains
 * the starter policy, which on tfjs's default pure-JS backend would take hours instead of minutes.
 */
async function setup(): Promise<Config> {
  const config = loadConfig();
  const { initBackend } = await import('../../trainer/model/backend.ts');
  await initBackend(config.TFJS_BACKEND);
  return config;
}

/** The bot's typed settings, from the validated configuration (the bot never reads the environment). */
async function botSettings(config: Config): Promise<import('../../bot/main.ts').BotSettings> {
  return {
    databaseUrl: config.DATABASE_URL,
    pgliteDir: config.PGLITE_DIR,
    policyModelDir: config.POLICY_MODEL_DIR,
    checkpointDir: config.CHECKPOINT_DIR,
    seed: config.SEED,
    maxTurns: config.MAX_TURNS,
    sessionIdleMinutes: config.SESSION_IDLE_MINUTES,
    ratingWeight: config.REWARD_RATING_WEIGHT,
    bwrapPath: config.BWRAP_BIN,
    pythonPath: config.PYTHON_BIN,
    chromiumPath: config.CHROMIUM_PATH,
    consentText: config.CONSENT_TEXT,
    exportSalt: config.EXPORT_SALT,
    discord: config.DISCORD_TOKEN ? { token: config.DISCORD_TOKEN, apiBase: config.DISCORD_API_BASE, guildIds: config.DISCORD_GUILD_IDS } : null,
  };
}

export function registerBotCommands(program: Command): void {
  program
    .command('start')
    .description('Migrate the database, seed tasks, make sure a policy is deployed, then run the Discord bot (DISCORD_TOKEN set) or the console')
    .action(async () => {
      const config = await setup();
      const { runStart } = await import('../../bot/main.ts');
      await runStart(await botSettings(config), createLogger(config.DISCORD_TOKEN ? config.LOG_LEVEL : quieter(config.LOG_LEVEL)));
    });
  program
    .command('bot')
    .description('Run the Discord bot (needs DISCORD_TOKEN)')
    .action(async () => {
      const config = await setup();
      const { runDiscord } = await import('../../bot/main.ts');
      await runDiscord(await botSettings(config), createLogger(config.LOG_LEVEL));
    });
  program
    .command('console')
    .description('Run a collaboration session in this terminal (same engine as the bot)')
    .action(async () => {
      const config = await setup();
      const { runConsole } = await import('../../bot/main.ts');
      await runConsole(await botSettings(config), createLogger(quieter(config.LOG_LEVEL)));
    });
}

/** The console shares the terminal with the logs: the default `info` becomes `warn` there; explicit debug stays. */
function quieter(level: string): string {
  return level === 'info' ? 'warn' : level;
}
