// The `sweetloop` command line: one program, each group of subcommands in bin/commands/<group>.ts.
// Groups import their implementation lazily, so `sweetloop --help` starts fast and needs no database.
import { Command, CommanderError } from 'commander';
import { ConfigError } from './config.ts';
import { registerDbCommands } from './commands/db.ts';

export function buildProgram(): Command {
  const program = new Command('sweetloop')
    .description('Collect human-in-the-loop ColBench sessions on Discord and train collaborative agents on them with SWEET-RL.')
    .showHelpAfterError()
    .exitOverride();
  registerDbCommands(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) process.exit(err.exitCode);
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    console.error(`sweetloop: ${err instanceof Error ? err.message : String(err)}`);
    if (process.env.LOG_LEVEL === 'debug' && err instanceof Error) console.error(err.stack);
    process.exit(1);
  }
}
