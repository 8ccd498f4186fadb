// The `sweetloop` command line: one program, each group of subcommands in bin/commands/<group>.ts.
// Groups import their implementation lazily, so `sweetloop --help` starts fast and needs no database.
import { Command, CommanderError, Help, type Option } from 'commander';
import { ConfigError } from './config.ts';
import { registerBotCommands } from './commands/bot.ts';
import { registerMigrationCommands } from './commands/migrations.ts';
import { registerDashboardCommands } from './commands/dashboard.ts';
import { registerDoctorCommands } from './commands/doctor.ts';
import { registerEnvCommands } from './commands/env.ts';
import { registerExportCommands } from './commands/export.ts';
import { registerImportCommands } from './commands/import.ts';
import { registerModelCommands } from './commands/model.ts';
import { registerDeployCommands } from './commands/deploy.ts';
import { registerPolicyCommands } from './commands/policy.ts';
import { registerPrivacyCommands } from './commands/privacy.ts';
import { registerServeCommands } from './commands/serve.ts';
import { registerStudyCommands } from './commands/study.ts';
import { registerTasksCommands } from './commands/tasks.ts';
import { registerTrainerCommands } from './commands/trainer.ts';

export function buildProgram(): Command {
  const program = new Command('sweetloop')
    .description(
      'Collect human-in-the-loop ColBench sessions on Discord and train collaborative agents on them with SWEET-RL.',
    )
    .showHelpAfterError()
    .exitOverride()
    // Set before the commands are made, so that every one inherits it: options a command cannot run without
    // are said to be required in its help and named in its usage line.
    .configureHelp({
      optionDescription: (option: Option) =>
        `${Help.prototype.optionDescription.call(new Help(), option)}${option.mandatory ? ' (required)' : ''}`,
      commandUsage: (cmd: Command) => {
        const usage = Help.prototype.commandUsage.call(new Help(), cmd);
        const required = cmd.options.filter((o) => o.mandatory).map((o) => o.flags.replace(/^-\w, /, ''));
        return required.length ? usage.replace(' [options]', ` ${required.join(' ')} [options]`) : usage;
      },
    });
  registerBotCommands(program); // start, bot, console
  registerMigrationCommands(program); // db migrate|status|diff
  registerDoctorCommands(program); // doctor
  registerTasksCommands(program); // tasks import|list|score
  registerModelCommands(program); // model logits|generate|starter
  registerTrainerCommands(program); // simulate, evaluate, train, trainer
  registerExportCommands(program); // export, report
  registerDeployCommands(program); // deploy, rollback
  registerPolicyCommands(program); // policy add|update|remove|list
  registerImportCommands(program); // import-sessions
  registerServeCommands(program); // serve
  registerEnvCommands(program); // env serve
  registerPrivacyCommands(program); // privacy delete|withdraw
  registerStudyCommands(program); // study create|list|show|pause|resume|close|consent|payouts
  registerDashboardCommands(program); // dashboard, dashboard token create|list|revoke
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
