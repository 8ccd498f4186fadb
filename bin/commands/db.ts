import type { Command } from 'commander';

export function registerDbCommands(program: Command): void {
  const db = program.command('db').description('Database: apply migrations, show their status');
  db.command('migrate')
    .description('Apply pending migrations to Postgres (DATABASE_URL) or the embedded PGlite database')
    .action(async () => {
      throw new Error('not implemented yet');
    });
  db.command('status')
    .description('Show which migrations are applied and which are pending')
    .action(async () => {
      throw new Error('not implemented yet');
    });
}
