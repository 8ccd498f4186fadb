// The bot's entry points, called by bin/commands/bot.ts with typed settings taken from the validated
// configuration: `start` (prepare everything, then Discord if a token is set, else the console), `bot`,
// `console`. Nothing here reads the environment or imports bin/.
import { userInfo } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../prisma/logger.ts';
import { openDatabase, type Database } from '../prisma/db.ts';
import { consoleIdentity, ensureDeployedPolicy, migrateDatabase, seedTasksIfEmpty } from './bootstrap.ts';
import { createRuntime, type Runtime } from './runtime.ts';

/** What the bot needs from the configuration (bin/config.ts documents each). */
export interface BotSettings {
  databaseUrl: string | undefined;
  pgliteDir: string;
  policyModelDir: string | undefined;
  checkpointDir: string;
  seed: number;
  maxTurns: number;
  sessionIdleMinutes: number;
  ratingWeight: number;
  bwrapPath: string;
  pythonPath: string;
  chromiumPath: string;
  consentText: string;
  exportSalt: string;
  discord: { token: string; apiBase: string; guildIds: string[] } | null;
}

async function prepare(config: BotSettings, log: Logger, progress: 'bar' | 'lines' | 'none'): Promise<Database> {
  const db = await openDatabase({ databaseUrl: config.databaseUrl, pgliteDir: config.pgliteDir, log });
  try {
    await migrateDatabase(db, log);
    await seedTasksIfEmpty(db, log);
    await ensureDeployedPolicy(db, { policyModelDir: config.policyModelDir, checkpointDir: config.checkpointDir, seed: config.seed, log, progress });
    return db;
  } catch (err) {
    await db.close();
    throw err;
  }
}

function runtimeFor(config: BotSettings, db: Database, log: Logger, channel: 'discord' | 'console'): Promise<Runtime> {
  return createRuntime({
    channel,
    db,
    log,
    maxTurns: config.maxTurns,
    idleMinutes: config.sessionIdleMinutes,
    ratingWeight: config.ratingWeight,
    bwrapPath: config.bwrapPath,
    pythonPath: config.pythonPath,
    chromiumPath: config.chromiumPath,
  });
}

/** Resolves when the process is asked to stop (SIGINT/SIGTERM). */
function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (sig: string) => resolve(sig);
    process.once('SIGINT', on);
    process.once('SIGTERM', on);
  });
}

export async function runDiscord(config: BotSettings, log: Logger, prepared?: Database): Promise<void> {
  const discord = config.discord;
  if (!discord) throw new Error('DISCORD_TOKEN is not set: the Discord bot needs a bot token (or run `sweetloop console`).');
  const db = prepared ?? (await prepare(config, log, 'lines'));
  const rt = await runtimeFor(config, db, log, 'discord');
  const { DiscordBot } = await import('./discord/bot.ts');
  const bot = new DiscordBot(rt.engine, rt.services, {
    ...discord,
    consentText: config.consentText,
    exportSalt: config.exportSalt,
  }, log);
  try {
    await bot.start();
    const sig = await untilSignal();
    log.info({ signal: sig }, 'stopping');
  } finally {
    await bot.stop().catch(() => {});
    await rt.close();
    await db.close();
  }
}

export async function runConsole(config: BotSettings, log: Logger, prepared?: Database): Promise<void> {
  const db = prepared ?? (await prepare(config, log, 'bar'));
  const rt = await runtimeFor(config, db, log, 'console');
  const { ConsoleChannel } = await import('./console.ts');
  const name = userInfo().username || 'local';
  const channel = new ConsoleChannel({
    engine: rt.engine,
    person: { externalId: consoleIdentity(name), displayName: name },
    consentText: config.consentText,
    outDir: join(config.checkpointDir, '..', 'console'),
  });
  const stop = untilSignal().then(() => channel.close());
  try {
    await Promise.race([channel.run(), stop]);
  } finally {
    channel.close();
    await rt.close();
    await db.close();
  }
}

/** `npm start`: prepare, then the Discord bot when a token is configured, otherwise the console. */
export async function runStart(config: BotSettings, log: Logger): Promise<void> {
  const db = await prepare(config, log, config.discord ? 'lines' : 'bar');
  if (config.discord) return runDiscord(config, log, db);
  return runConsole(config, log, db);
}
