import type { Command } from 'commander';

/**
 * `sweetloop privacy delete <user>` / `privacy withdraw <user>`: an operator handling a request that came by
 * mail does what /privacy does (bot/privacy.ts), and with DISCORD_TOKEN set also deletes the person's threads.
 */
export function registerPrivacyCommands(program: Command): void {
  const privacy = program.command('privacy').description("A person's data: delete every trace of it, or withdraw their consent");

  privacy
    .command('delete <user>')
    .description('Delete every trace of a person (Discord user id): rows, audit mentions, files, threads; prints the receipt')
    // One name a flag (repeat it), not a variadic list: a list would take an id written after it as one more name.
    .option('--name <name>', 'another name they are known by (their Discord username), searched for in files; repeat for more', (v: string, prev: string[] = []) => [...prev, v])
    .action(async (user: string, opts: { name?: string[] }) => {
      if (!/^\d{17,20}$/.test(user) && !/^console:/.test(user)) throw new Error(`"${user}" is not a Discord user id (17-20 digits) or console:<name>`);
      const [{ loadConfig }, { createLogger }, { openDatabase }, { deletePerson, formatReceipt }] = await Promise.all([
        import('../config.ts'),
        import('../log.ts'),
        import('../../prisma/db.ts'),
        import('../../bot/privacy.ts'),
      ]);
      const config = loadConfig();
      const log = createLogger(config);
      const db = await openDatabase({ databaseUrl: config.DATABASE_URL, pgliteDir: config.PGLITE_DIR, poolSize: config.DATABASE_POOL_SIZE, log });
      try {
        const r = await deletePerson(db.prisma, user, {
          key: config.PRIVACY_KEY ?? config.EXPORT_SALT,
          dirs: [config.CHECKPOINT_DIR, ...config.PRIVACY_SCAN_DIRS],
          requestedBy: 'cli',
          ...(opts.name ? { names: opts.name } : {}),
        });
        let removed = 0;
        if (config.DISCORD_TOKEN && r.threadIds.length) {
          const { REST, Routes } = await import('discord.js');
          const rest = new REST({ api: config.DISCORD_API_BASE }).setToken(config.DISCORD_TOKEN);
          for (const id of r.threadIds) {
            try {
              await rest.delete(Routes.channel(id));
              removed++;
            } catch (err) {
              log.warn({ thread: id, err: (err as Error).message }, 'cannot delete thread');
            }
          }
        }
        console.log(formatReceipt({ ...r, threadIds: r.threadIds.slice(0, removed) }));
        // A file that could not be cleaned is named in the receipt; the exit status says the deletion is not complete.
        if (r.filesFailed.length) process.exitCode = 1;
        if (r.threadIds.length > removed) console.log(`Threads NOT deleted (delete them by hand${config.DISCORD_TOKEN ? '' : ', or set DISCORD_TOKEN'}): ${r.threadIds.slice(removed).join(', ')}`);
      } finally {
        await db.close();
      }
    });

  privacy
    .command('withdraw <user>')
    .description("Withdraw a person's consent without deleting: their sessions leave no export or training set from now on")
    .action(async (user: string) => {
      const [{ loadConfig }, { createLogger }, { openDatabase }, { withdrawConsent }] = await Promise.all([
        import('../config.ts'),
        import('../log.ts'),
        import('../../prisma/db.ts'),
        import('../../prisma/privacy-store.ts'),
      ]);
      const config = loadConfig();
      const db = await openDatabase({ databaseUrl: config.DATABASE_URL, pgliteDir: config.PGLITE_DIR, poolSize: config.DATABASE_POOL_SIZE, log: createLogger(config) });
      try {
        console.log((await withdrawConsent(db.prisma, user)) ? `Consent of ${user} withdrawn.` : `${user} had not given consent.`);
      } finally {
        await db.close();
      }
    });
}
