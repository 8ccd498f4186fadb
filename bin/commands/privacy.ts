import type { Command } from 'commander';

/**
 * `sweetloop privacy delete <user>` / `privacy withdraw <user>`: an operator handling a request that came by
 * mail does what /privacy does (bot/privacy.ts), and with DISCORD_TOKEN set also deletes the person's threads.
 */
export function registerPrivacyCommands(program: Command): void {
  const privacy = program
    .command('privacy')
    .description("A person's data: delete every trace of it, or withdraw their consent");

  privacy
    .command('delete <user>')
    .description(
      "Delete a person's data by their Discord user id: rows, audit mentions, their rows in export files, threads; marks models trained on it; prints the receipt",
    )
    .action(async (user: string) => {
      if (!/^\d{17,20}$/.test(user) && !/^console:/.test(user))
        throw new Error(`"${user}" is not a Discord user id (17-20 digits) or console:<name>`);
      const [{ loadConfig }, { privacySettings }, { createLogger }, { openDatabase }, { deletePerson, formatReceipt }] =
        await Promise.all([
          import('../config.ts'),
          import('../config-privacy.ts'),
          import('../log.ts'),
          import('../../prisma/db.ts'),
          import('../../bot/privacy.ts'),
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
        const r = await deletePerson(db.prisma, user, { ...privacySettings(config), requestedBy: 'cli' });
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
        // A file that could not be cleaned or checked is named in the receipt; the exit status says the deletion is not complete.
        if (r.filesFailed.length) process.exitCode = 1;
        if (r.threadIds.length > removed)
          console.log(
            `Threads NOT deleted (delete them by hand${config.DISCORD_TOKEN ? '' : ', or set DISCORD_TOKEN'}): ${r.threadIds.slice(removed).join(', ')}`,
          );
      } finally {
        await db.close();
      }
    });

  privacy
    .command('withdraw <user>')
    .description(
      "Withdraw a person's consent without deleting: their sessions leave no export or training set from now on",
    )
    .action(async (user: string) => {
      const [{ loadConfig }, { createLogger }, { openDatabase }, { withdrawConsent }] = await Promise.all([
        import('../config.ts'),
        import('../log.ts'),
        import('../../prisma/db.ts'),
        import('../../prisma/privacy-store.ts'),
      ]);
      const config = loadConfig();
      const db = await openDatabase({
        databaseUrl: config.DATABASE_URL,
        pgliteDir: config.PGLITE_DIR,
        poolSize: config.DATABASE_POOL_SIZE,
        log: createLogger(config),
      });
      try {
        console.log(
          (await withdrawConsent(db.prisma, user)) ? `Consent of ${user} withdrawn.` : `${user} had not given consent.`,
        );
      } finally {
        await db.close();
      }
    });
}
