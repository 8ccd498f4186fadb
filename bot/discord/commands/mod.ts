// /mod: moderators' tools (statistics, export, deploy and rollback, pause and resume, ban and unban, flags).
// Carries Discord's default member permission Manage Server (the client hides it from others) and is checked
// again here before anything else, since a server admin can re-grant commands to anyone; the refusal needs no
// database. Every action is audited by the services it calls.
import { AttachmentBuilder, MessageFlags, PermissionFlagsBits, SlashCommandBuilder, type ChatInputCommandInteraction } from 'discord.js';
import { PolicyError } from '../../../prisma/policy-store.ts';
import { formatStats, ModerationError } from '../../moderation.ts';
import { ack, say, waitNotice, type BotContext } from '../context.ts';
import type { SlashCommand } from './types.ts';

export const MODERATOR_PERMISSION = PermissionFlagsBits.ManageGuild;

const definition = new SlashCommandBuilder()
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
  .addSubcommand((s) => s.setName('unban').setDescription('Lift a ban').addUserOption((o) => o.setName('user').setDescription('Who').setRequired(true)))
  .addSubcommand((s) =>
    s
      .setName('flag')
      .setDescription('Flag a session for review (flagged sessions are left out of exports by default)')
      .addStringOption((o) => o.setName('session').setDescription('Session id').setRequired(true))
      .addStringOption((o) => o.setName('reason').setDescription('Why')),
  )
  .toJSON();

type Handler = (ctx: BotContext, i: ChatInputCommandInteraction) => Promise<void>;

const subcommands: Record<string, Handler> = {
  stats: async (ctx, i) => say(i, formatStats(await ctx.services.stats(waitNotice(i)))),

  async export(ctx, i) {
    const format = (i.options.getString('format') as 'sweet-rl' | 'jsonl' | null) ?? 'sweet-rl';
    const max = ctx.options.maxExportBytes ?? 8 * 1024 * 1024;
    const file = await ctx.services.exportSessions(i.user.id, format, ctx.options.exportSalt, max, waitNotice(i));
    if (!file.data) {
      return say(i, `The export is ${(file.bytes / 1e6).toFixed(1)} MB, over the ${(max / 1e6).toFixed(0)} MB a message can carry. Run \`sweetloop export\` on the server instead.`);
    }
    const stamp = new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-');
    await i.editReply({
      content: `Export: ${file.sessions} session(s), ${file.turns} turn(s), format ${format}. The dataset card is attached too.`,
      files: [
        new AttachmentBuilder(file.data, { name: `sweetloop-${stamp}.jsonl` }),
        new AttachmentBuilder(Buffer.from(file.card), { name: `sweetloop-${stamp}.README.md` }),
      ],
    });
  },

  async deploy(ctx, i) {
    const v = await ctx.services.deploy(i.user.id, i.options.getString('version', true), waitNotice(i));
    await ctx.engine.refreshPolicy();
    return say(i, `Deployed ${v.name}. New sessions use it; running sessions keep their policy.`);
  },

  async rollback(ctx, i) {
    const v = await ctx.services.rollback(i.user.id, waitNotice(i));
    await ctx.engine.refreshPolicy();
    return say(i, `Rolled back: ${v.name} is deployed again.`);
  },

  async pause(ctx, i) {
    await ctx.services.setPaused(i.user.id, true, waitNotice(i));
    return say(i, 'Collection paused: no new sessions start. Running sessions continue.');
  },

  async resume(ctx, i) {
    await ctx.services.setPaused(i.user.id, false, waitNotice(i));
    return say(i, 'Collection resumed.');
  },

  async ban(ctx, i) {
    const user = i.options.getUser('user', true);
    const threads = await ctx.services.ban(i.user.id, user.id, i.options.getString('reason'), waitNotice(i));
    for (const t of threads) await ctx.threads.close(t, 'This session was ended by a moderator.');
    return say(i, `Banned <@${user.id}>${threads.length ? ' and ended their running session' : ''}.`);
  },

  async unban(ctx, i) {
    const user = i.options.getUser('user', true);
    const done = await ctx.services.unban(i.user.id, user.id, waitNotice(i));
    return say(i, done ? `Unbanned <@${user.id}>.` : `<@${user.id}> was not banned.`);
  },

  async flag(ctx, i) {
    const session = i.options.getString('session', true).trim();
    const id = await ctx.services.flag(i.user.id, session, i.options.getString('reason') ?? 'flagged by a moderator', waitNotice(i));
    return say(i, `Flagged (flag ${id}).`);
  },
};

export const mod: SlashCommand = {
  definition,
  async execute(ctx, i) {
    if (!i.memberPermissions?.has(MODERATOR_PERMISSION)) {
      await i.reply({ content: 'This command is for moderators (Manage Server permission).', flags: MessageFlags.Ephemeral });
      return;
    }
    if (!(await ack(ctx, i, 'reply'))) return;
    const run = subcommands[i.options.getSubcommand()];
    if (!run) return say(i, 'Unknown moderator command.');
    try {
      await run(ctx, i);
    } catch (err) {
      if (err instanceof PolicyError || err instanceof ModerationError) return say(i, err.message);
      throw err;
    }
  },
};
