// The bot's entry points, called by bin/commands/bot.ts with typed settings taken from the validated
// configuration: `start` (prepare everything, then Discord if a token is set, else the console), `bot`,
// `console`. Nothing here reads the environment or imports bin/.
import { userInfo } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../tasks/logger.ts';
import type { LocalServeSettings } from '../trainer/serve/local.ts';
import { openDatabase, type Database } from '../prisma/db.ts';
import {
  consoleIdentity,
  ensureDeployedPolicy,
  migrateDatabase,
  seedTasksIfEmpty,
  starterNotice,
  warnIfOnlyStarter,
} from './bootstrap.ts';
import type { Limits } from './limits.ts';
import { BotMetrics, startHealthServer } from './health.ts';
import { createRuntime, type Runtime } from './runtime.ts';
import type { PrivacySettings } from './privacy.ts';
import { serveUntilSignal, untilSignal } from './shutdown.ts';

/** What the bot needs from the configuration (bin/config.ts documents each). */
export interface BotSettings {
  databaseUrl: string | undefined;
  pgliteDir: string;
  /** Most Postgres connections of the bot's pool (DATABASE_POOL_SIZE). */
  databasePoolSize: number;
  policyModelDir: string | undefined;
  checkpointDir: string;
  seed: number;
  /** How checkpoint versions are served: by Sweetloop's own server in this process (trainer/serve/local.ts). */
  localServe: LocalServeSettings;
  maxTurns: number;
  sessionIdleMinutes: number;
  ratingWeight: number;
  bwrapPath: string;
  pythonPath: string;
  chromiumPath: string;
  /** Answers scored at once (bot/session/scoring.ts). */
  scoringPool: number;
  consentText: string;
  exportSalt: string;
  exportDir: string;
  discord: DiscordSettings | null;
  /** Per-person limits (bot/limits.ts). */
  limits: Limits;
  /** Where /health and /metrics listen (bot/health.ts); null: not served. */
  health: { port: number; host: string } | null;
  /** Where `npm start` serves the dashboard beside the bot or console (bot/dashboard/server.ts); null: not served. */
  dashboard: { port: number; host: string } | null;
  /** How long a SIGTERM may take: in-flight turns are finished within it, then the process exits regardless. */
  shutdownDeadlineMs: number;
  /** Deletions (bot/privacy.ts): the keyed hash's secret, the folders scanned and the folders never entered. */
  privacy: PrivacySettings;
  /** EXPORT_SALT is the development default (a Discord bot refuses to export with it). */
  exportSaltIsDefault: boolean;
}

export interface DiscordSettings {
  token: string;
  apiBase: string;
  /** The allowlist of guilds (empty: any). */
  guildIds: string[];
  operatorIds: string[];
  operatorRoleIds: string[];
  moderatorRoleIds: string[];
}

async function prepare(config: BotSettings, log: Logger, progress: 'bar' | 'lines' | 'none'): Promise<Database> {
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    pgliteDir: config.pgliteDir,
    poolSize: config.databasePoolSize,
    log,
    throughOwner: false,
  });
  try {
    await migrateDatabase(db, log);
    await seedTasksIfEmpty(db, log);
    const deployed = await ensureDeployedPolicy(db, {
      policyModelDir: config.policyModelDir,
      checkpointDir: config.checkpointDir,
      seed: config.seed,
      log,
      progress,
    });
    // People on Discord are who a study is for; the console is for trying the starter, and says what it is.
    if (config.discord) warnIfOnlyStarter(deployed, log);
    else {
      const notice = await starterNotice(deployed).catch(() => null);
      if (notice) process.stdout.write(`${notice}\n`);
    }
    // Ready: other sweetloop commands may now reach an embedded database through this process.
    await db.share?.();
    return db;
  } catch (err) {
    await db.close();
    throw err;
  }
}

function runtimeFor(
  config: BotSettings,
  db: Database,
  log: Logger,
  channel: 'discord' | 'console',
  observer?: BotMetrics,
): Promise<Runtime> {
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
    limits: config.limits,
    scoringPool: config.scoringPool,
    localServe: config.localServe,
    privacy: config.privacy,
    ...(observer ? { observer } : {}),
  });
}

export async function runDiscord(config: BotSettings, log: Logger, prepared?: Database): Promise<void> {
  const discord = config.discord;
  if (!discord)
    throw new Error('DISCORD_TOKEN is not set: the Discord bot needs a bot token (or run `sweetloop console`).');
  const db = prepared ?? (await prepare(config, log, 'lines'));
  // Scraped only once the health server is up, after `rt` below exists.
  const overdue = async () => (await rt.engine.overdue()).length;
  const metrics = new BotMetrics(
    () => db.prisma.session.count({ where: { status: 'active', channel: 'discord' } }),
    overdue,
    () => rt.engine.scoringLoad(),
  );
  const rt = await runtimeFor(config, db, log, 'discord', metrics);
  const { DiscordBot } = await import('./discord/bot.ts');
  const bot = new DiscordBot(
    rt.engine,
    rt.services,
    {
      ...discord,
      consentText: config.consentText,
      exportSalt: config.exportSalt,
      exportSaltIsDefault: config.exportSaltIsDefault,
      exportDir: config.exportDir,
      chromiumPath: config.chromiumPath,
      metrics,
    },
    log,
  );
  let stopping = false;
  const health = config.health
    ? await startHealthServer({
        port: config.health.port,
        host: config.health.host,
        metrics,
        live: () => !stopping,
        ready: {
          gateway: () => bot.isReady(),
          database: async () => (await db.prisma.$queryRaw`SELECT 1`, true),
          policy: () => rt.policies.deployed !== null,
          noOverdueWork: async () => (await overdue()) === 0,
        },
      })
    : null;
  if (health) log.info({ port: health.port }, 'health and metrics served');
  try {
    await bot.start();
    await serveUntilSignal({
      service: bot,
      deadlineMs: config.shutdownDeadlineMs,
      log,
      onSignal: () => (stopping = true),
      close: async () => {
        await health?.close().catch(() => {});
        await rt.close();
        await db.close();
      },
    });
  } finally {
    await bot.stop().catch(() => {});
    await health?.close().catch(() => {});
    await rt.close();
    await db.close();
  }
}

/** Runs the console until the person leaves (false) or the process is asked to stop (true). */
export async function runConsole(
  config: BotSettings,
  log: Logger,
  prepared?: Database,
  o: { keepDatabase?: boolean } = {},
): Promise<boolean> {
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
  const stop = untilSignal().then(() => {
    process.stderr.write(`\n${channel.interruptedLine()}\n`);
    channel.close();
  });
  try {
    return await Promise.race([channel.run().then(() => false), stop.then(() => true)]);
  } finally {
    channel.close();
    await rt.close();
    if (!o.keepDatabase) await db.close();
  }
}

/** `npm start`: prepare, then the Discord bot when a token is configured, otherwise the console. */
export async function runStart(config: BotSettings, log: Logger): Promise<void> {
  const db = await prepare(config, log, config.discord ? 'lines' : 'bar');
  let dashboard: { close(): Promise<unknown> } | null = null;
  if (config.dashboard) {
    const { startDashboard } = await import('./dashboard/server.ts');
    const d = await startDashboard({
      db,
      ...config.dashboard,
      salt: config.exportSalt,
      chromiumPath: config.chromiumPath,
      log,
    });
    dashboard = d.app;
    // One plain line (not a warning): where it is.
    process.stderr.write(`Dashboard: ${d.url}\n`);
    // The login link carries its secret: printed once on stderr, never through the logger (which would redact it).
    if (d.loginUrl)
      process.stderr.write(
        `Dashboard login link (open it once; its token lasts until this process stops): ${d.loginUrl}\n`,
      );
  }
  try {
    if (config.discord) return await runDiscord(config, log, db);
    const signalled = await runConsole(config, log, db, { keepDatabase: dashboard !== null });
    // The console is done (the person said no more sessions): the dashboard beside it serves until asked to stop.
    if (dashboard && !signalled) {
      process.stderr.write('The dashboard stays up until this process is asked to stop (Ctrl-C).\n');
      await untilSignal();
    }
    if (dashboard) {
      await dashboard.close().catch(() => {});
      dashboard = null;
      await db.close();
    }
  } finally {
    await dashboard?.close().catch(() => {});
  }
}
