import type { Command } from 'commander';

export function registerDoctorCommands(program: Command): void {
  program
    .command('doctor')
    .description(
      "Check the database, tfjs backend, Chromium, bubblewrap and python3 (and Docker Compose's version where Docker is installed), and with DISCORD_TOKEN set the token, every endpoint version, operators, EXPORT_SALT and PRIVACY_KEY; with a fix for each problem (exit 1 if any fails)",
    )
    .option('--json', 'print the checks as JSON')
    .option(
      '--skip <checks>',
      'comma-separated checks to leave out (database, tfjs backend, chromium, bubblewrap, python3, docker compose, discord token, operators, secrets, endpoints)',
    )
    .action(async (opts: { json?: boolean; skip?: string }) => {
      const [{ config: loadDotenv }, { runDoctor, formatReport }] = await Promise.all([
        import('dotenv'),
        import('../doctor.ts'),
      ]);
      loadDotenv({ quiet: true });
      // Not loadConfig(): a bad variable is one of the things the doctor reports, not a reason to stop.
      const report = await runDoctor(process.env, {
        skip:
          opts.skip
            ?.split(',')
            .map((s) => s.trim())
            .filter(Boolean) ?? [],
      });
      console.log(opts.json ? JSON.stringify(report, null, 2) : formatReport(report));
      if (!report.ok) process.exitCode = 1;
    });
}
