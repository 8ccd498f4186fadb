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

export function registerBotCommands(program: Command): void {
  program
    .command('start')
    .description('Migrate the database, seed tasks, make sure a policy is deployed, then run the Discord bot (DISCORD_TOKEN set) or the console')
    .action(async () => {
      const config = await setup();
      const { runStart } = await import('../../bot/main.ts');
      await runStart(config, createLogger(config.DISCORD_TOKEN ? config.LOG_LEVEL : quieter(config.LOG_LEVEL)));
    });
  program
    .command('bot')
    .description('Run the Discord bot (needs DISCORD_TOKEN)')
    .action(async () => {
      const config = await setup();
      const { runDiscord } = await import('../../bot/main.ts');
      await runDiscord(config, createLogger(config.LOG_LEVEL));
    });
  program
    .command('console')
    .description('Run a collaboration session in this terminal (same engine as the bot)')
    .action(async () => {
      const config = await setup();
      const { runConsole } = await import('../../bot/main.ts');
      await runConsole(config, createLogger(quieter(config.LOG_LEVEL)));
    });
}

/** The console shares the terminal with the logs: the default `info` becomes `warn` there; explicit debug stays. */
function quieter(level: string): string {
  return level === 'info' ? 'warn' : level;
}
