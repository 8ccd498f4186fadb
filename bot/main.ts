// The bot's entry points, called by bin/commands/bot.ts with the validated configuration:
// `start` (prepare everything, then Discord if a token is set, else the console), `bot`, `console`.
import { userInfo } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../bin/config.ts';
import type { Logger } from '../bin/log.ts';
import { openDatabase, type Database } from '../prisma/db.ts';
import { consoleIdentity, ensureDeployedPolicy, migrateDatabase, seedTasksIfEmpty } from './bootstrap.ts';
import { createRuntime, type Runtime } from './runtime.ts';

async function prepare(config: Config, log: Logger, progress: 'bar' | 'lines' | 'none'): Promise<Database> {
  const db = await openDatabase({ databaseUrl: config.DATABASE_URL, pgliteDir: config.PGLITE_DIR, log });
  try {
    await migrateDatabase(db, log);
    await seedTasksIfEmpty(db, log);
    await ensureDeployedPolicy(db, { policyModelDir: config.POLICY_MODEL_DIR, checkpointDir: config.CHECKPOINT_DIR, seed: config.SEED, log, progress });
    return db;
  } catch (err) {
    await db.close();
    throw err;
  }
}

function runtimeFor(config: Config, db: Database, log: Logger, channel: 'discord' | 'console'): Promise<Runtime> {
  return createRuntime({
    channel,
    db,
    log,
    maxTurns: config.MAX_TURNS,
    idleMinutes: config.SESSION_IDLE_MINUTES,
    ratingWeight: config.REWARD_RATING_WEIGHT,
    bwrapPath: config.BWRAP_BIN,
    pythonPath: config.PYTHON_BIN,
    chromiumPath: config.CHROMIUM_PATH,
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

export async function runDiscord(config: Config, log: Logger, prepared?: Database): Promise<void> {
  if (!config.DISCORD_TOKEN) throw new Error('DISCORD_TOKEN is not set: the Discord bot needs a bot token (or run `sweetloop console`).');
  const db = prepared ?? (await prepare(config, log, 'lines'));
  const rt = await runtimeFor(config, db, log, 'discord');
  const { DiscordBot } = await import('./discord/bot.ts');
  const bot = new DiscordBot(rt.engine, db, {
    token: config.DISCORD_TOKEN,
    apiBase: config.DISCORD_API_BASE,
    guildIds: config.DISCORD_GUILD_IDS,
    consentText: config.CONSENT_TEXT,
    exportSalt: config.EXPORT_SALT,
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

export async function runConsole(config: Config, log: Logger, prepared?: Database): Promise<void> {
  const db = prepared ?? (await prepare(config, log, 'bar'));
  const rt = await runtimeFor(config, db, log, 'console');
  const { ConsoleChannel } = await import('./console.ts');
  const name = userInfo().username || 'local';
  const channel = new ConsoleChannel({
    engine: rt.engine,
    person: { externalId: consoleIdentity(name), displayName: name },
    consentText: config.CONSENT_TEXT,
    outDir: join(config.CHECKPOINT_DIR, '..', 'console'),
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
export async function runStart(config: Config, log: Logger): Promise<void> {
  const db = await prepare(config, log, config.DISCORD_TOKEN ? 'lines' : 'bar');
  if (config.DISCORD_TOKEN) return runDiscord(config, log, db);
  return runConsole(config, log, db);
}
