import type { Command } from 'commander';
import { loadConfig } from '../config.ts';
import { createLogger } from '../log.ts';

export function registerBotCommands(program: Command): void {
  program
    .command('start')
    .description('Migrate the database, seed tasks, make sure a policy is deployed, then run the Discord bot (DISCORD_TOKEN set) or the console')
    .action(async () => {
      const config = loadConfig();
      const { runStart } = await import('../../bot/main.ts');
      await runStart(config, createLogger(config.DISCORD_TOKEN ? config.LOG_LEVEL : quieter(config.LOG_LEVEL)));
    });
  program
    .command('bot')
    .description('Run the Discord bot (needs DISCORD_TOKEN)')
    .action(async () => {
      const config = loadConfig();
      const { runDiscord } = await import('../../bot/main.ts');
      await runDiscord(config, createLogger(config.LOG_LEVEL));
    });
  program
    .command('console')
    .description('Run a collaboration session in this terminal (same engine as the bot)')
    .action(async () => {
      const config = loadConfig();
      const { runConsole } = await import('../../bot/main.ts');
      await runConsole(config, createLogger(quieter(config.LOG_LEVEL)));
    });
}

/** The console shares the terminal with the logs: the default `info` becomes `warn` there; explicit debug stays. */
function quieter(level: string): string {
  return level === 'info' ? 'warn' : level;
}
