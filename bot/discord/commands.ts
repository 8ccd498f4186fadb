// The slash commands Sweetloop registers. Moderator commands carry Discord's default member permission
// Manage Server (so the client hides them from others) and are checked again in code, since a server admin
// can re-grant commands to anyone in the integration settings.
import { PermissionFlagsBits, SlashCommandBuilder, type RESTPostAPIChatInputApplicationCommandsJSONBody } from 'discord.js';

export const MODERATOR_PERMISSION = PermissionFlagsBits.ManageGuild;

export function commandDefinitions(): RESTPostAPIChatInputApplicationCommandsJSONBody[] {
  const task = new SlashCommandBuilder()
    .setName('task')
    .setDescription('Collaborate with the agent on a task')
    .addSubcommand((s) =>
      s
        .setName('start')
        .setDescription('Start a session with the agent in a private thread')
        .addStringOption((o) =>
          o
            .setName('kind')
            .setDescription('Backend (a Python function) or frontend (a web page); default: whichever is needed most')
            .addChoices({ name: 'backend', value: 'backend' }, { name: 'frontend', value: 'frontend' }),
        ),
    )
    .addSubcommand((s) => s.setName('stop').setDescription('End your current session'))
    .addSubcommand((s) => s.setName('status').setDescription('Show your current session'));

  const privacy = new SlashCommandBuilder()
    .setName('privacy')
    .setDescription('Your data')
    .addSubcommand((s) => s.setName('delete').setDescription('Withdraw your consent and delete all your sessions and ratings'));

  const mod = new SlashCommandBuilder()
    .setName('mod')
    .setDescription('Moderator tools')
    .setDefaultMemberPermissions(MODERATOR_PERMISSION)
    .addSubcommand((s) => s.setName('stats').setDescription('Collection statistics'))
    .addSubcommand((s) =>
      s
        .setName('export')
        .setDescription('Export the collected sessions as a file')
        .addStringOption((o) =>
          o.setName('format').setDescription('File format (default sweet-rl)').addChoices({ name: 'sweet-rl', value: 'sweet-rl' }, { name: 'jsonl', value: 'jsonl' }),
        ),
    )
    .addSubcommand((s) =>
      s.setName('deploy').setDescription('Deploy a policy version').addStringOption((o) => o.setName('version').setDescription('Version name').setRequired(true)),
    )
    .addSubcommand((s) => s.setName('rollback').setDescription('Re-deploy the previously deployed policy'))
    .addSubcommand((s) => s.setName('pause').setDescription('Stop new sessions from starting'))
    .addSubcommand((s) => s.setName('resume').setDescription('Allow new sessions again'))
    .addSubcommand((s) =>
      s
        .setName('ban')
        .setDescription('Ban a person from sessions')
        .addUserOption((o) => o.setName('user').setDescription('Who').setRequired(true))
        .addStringOption((o) => o.setName('reason').setDescription('Why (kept in the audit log)')),
    )
    .addSubcommand((s) =>
      s.setName('unban').setDescription('Lift a ban').addUserOption((o) => o.setName('user').setDescription('Who').setRequired(true)),
    )
    .addSubcommand((s) =>
      s
        .setName('flag')
        .setDescription('Flag a session for review (flagged sessions are left out of exports by default)')
        .addStringOption((o) => o.setName('session').setDescription('Session id').setRequired(true))
        .addStringOption((o) => o.setName('reason').setDescription('Why')),
    );

  return [task.toJSON(), privacy.toJSON(), mod.toJSON()];
}
