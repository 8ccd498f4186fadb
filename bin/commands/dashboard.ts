// `sweetloop dashboard [--port] [--host]` and `sweetloop dashboard token create|list|revoke`: the web dashboard
// (bot/dashboard/server.ts) and its access tokens (bot/dashboard/access.ts makes them, prisma/dashboard-store.ts
// keeps their hashes). A token's secret is printed once and never stored.
import type { Command } from 'commander';
import { withDatabase } from './with-database.ts';
import { choice, integerOption } from './options.ts';

export function registerDashboardCommands(program: Command): void {
  const dashboard = program
    .command('dashboard')
    .description('Serve the web dashboard: studies, sessions with per-turn credit, policies, training runs, people')
    .option('--port <n>', 'port to listen on (default: DASHBOARD_PORT, else 8080)', integerOption('port'))
    .option(
      '--host <address>',
      'address to listen on (default: DASHBOARD_HOST, 127.0.0.1); on loopback the login link printed at start logs in, beyond it a stored token is needed',
    )
    .action(async (o: { port?: number; host?: string }) => {
      const [{ loadConfig }, { createLogger }, { openDatabase }, { startDashboard }] = await Promise.all([
        import('../config.ts'),
        import('../log.ts'),
        import('../../prisma/db.ts'),
        import('../../bot/dashboard/server.ts'),
      ]);
      const config = loadConfig();
      const log = createLogger(config);
      const db = await openDatabase({
        databaseUrl: config.DATABASE_URL,
        pgliteDir: config.PGLITE_DIR,
        poolSize: config.DATABASE_POOL_SIZE,
        log,
      });
      try {
        const { app, url, loginUrl } = await startDashboard({
          db,
          host: o.host ?? config.DASHBOARD_HOST,
          port: o.port ?? (config.DASHBOARD_PORT || 8080),
          salt: config.EXPORT_SALT,
          chromiumPath: config.CHROMIUM_PATH,
          log,
        });
        console.log(`Dashboard: ${url}`);
        // Printed once, on stdout and never through the logger (which would redact it), as Jupyter does.
        if (loginUrl)
          console.log(`Log in by opening this link once (its token lasts until the dashboard stops): ${loginUrl}`);
        await new Promise<void>((resolve) => {
          const stop = () => resolve();
          process.once('SIGINT', stop);
          process.once('SIGTERM', stop);
        });
        await app.close();
      } finally {
        await db.close();
      }
    });

  const token = dashboard
    .command('token')
    .description('Tokens for the dashboard beyond loopback (only their hashes are stored)');
  token
    .command('create')
    .description("Create a token and print it once (a moderator's sees one guild)")
    .requiredOption('--role <role>', 'operator or moderator', choice('role', ['operator', 'moderator'] as const))
    .option('--guild <id>', "the guild a moderator's token sees")
    .action(async (o: { role: 'operator' | 'moderator'; guild?: string }) => {
      const [{ newTokenSecret }, { createDashboardToken }] = await Promise.all([
        import('../../bot/dashboard/access.ts'),
        import('../../prisma/dashboard-store.ts'),
      ]);
      if (o.guild !== undefined && !/^\d{17,20}$/.test(o.guild))
        throw new Error(`--guild: a Discord guild id (17-20 digits), got "${o.guild}"`);
      const t = newTokenSecret();
      const row = await withDatabase((db) =>
        createDashboardToken(db.prisma, 'cli', {
          role: o.role,
          guildId: o.guild ?? null,
          tokenSha256: t.sha256,
          prefix: t.prefix,
        }),
      );
      console.log(
        `Token ${row.prefix}… (${row.role}${row.guildId ? `, guild ${row.guildId}` : ''}), shown this once:\n${t.secret}`,
      );
      console.log(
        'Send it as "Authorization: Bearer <token>", or open <dashboard>/login?token=<token> once (it moves into a cookie).',
      );
    });
  token
    .command('list')
    .description('List tokens (prefix, role, guild, created, revoked)')
    .action(async () => {
      const { listDashboardTokens } = await import('../../prisma/dashboard-store.ts');
      const rows = await withDatabase((db) => listDashboardTokens(db.prisma));
      if (!rows.length) console.log('No dashboard token.');
      for (const r of rows)
        console.log(
          `${r.prefix}…  ${r.role.padEnd(9)} ${r.guildId ?? '(every guild)'}  created ${r.createdAt.toISOString()}${r.revokedAt ? `  revoked ${r.revokedAt.toISOString()}` : ''}  id ${r.id}`,
        );
    });
  token
    .command('revoke <prefixOrId>')
    .description('End a token, named by the prefix `token list` shows or its id')
    .action(async (which: string) => {
      const { revokeDashboardToken } = await import('../../prisma/dashboard-store.ts');
      const done = await withDatabase((db) => revokeDashboardToken(db.prisma, 'cli', which));
      if (!done) throw new Error(`no live dashboard token matches "${which}" (sweetloop dashboard token list)`);
      console.log(`Revoked ${which}.`);
    });
}
