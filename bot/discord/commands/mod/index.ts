// /mod: moderators' tools (statistics, export, deploy and rollback, pause and resume, ban and unban, flags, study progress).
// Carries Discord's default member permission Manage Server (the client hides it from others) and is checked
// again here before anything else (permissions.ts: guild moderators act within their guild, operators
// everywhere), since a server admin can re-grant commands to anyone; the refusal needs no database. Every
// action is audited, with its guild and actor, by the services it calls.
import {
  AttachmentBuilder,
  MessageFlags,
  PermissionFlagsBits,
  SlashCommandBuilder,
  type ChatInputCommandInteraction,
} from 'discord.js';
import { PolicyError } from '../../../../prisma/policy-store.ts';
import { formatStats, ModerationError } from '../../../moderation.ts';
import { ack, say, waitNotice, type BotContext } from '../../context.ts';
import type { SlashCommand } from '../types.ts';
import { ChatTemplateError } from '../../../export/chat-template.ts';
import { EXPORT_FORMATS, ExportError } from '../../../export/export.ts';
import { ExportRequestError, type ExportRequestInput } from '../../../export/options.ts';
import { FilterError } from '../../../export/query.ts';
import { DATA_SOURCES, DEFAULT_DATA_SOURCE } from '../../../../prisma/data-source.ts';
import { actorFor, authorityOf, mayRun } from '../../permissions.ts';
import { experimentGroup, experimentHandlers } from './experiment.ts';
import { studyGroup, studyHandlers } from './study.ts';
import {
  excludeSubcommand,
  goldSubcommand,
  includeSubcommand,
  participantHandlers,
  participantsSubcommand,
} from './participants.ts';

export const MODERATOR_PERMISSION = PermissionFlagsBits.ManageGuild;

const definition = new SlashCommandBuilder()
  .setName('mod')
  .setDescription('Moderator tools')
  .setDefaultMemberPermissions(MODERATOR_PERMISSION)
  .addSubcommand((s) => s.setName('stats').setDescription('Collection statistics'))
  .addSubcommand((s) =>
    s
      .setName('export')
      .setDescription('Export the collected sessions (same formats and filters as `sweetloop export`)')
      .addStringOption((o) =>
        o
          .setName('format')
          .setDescription('File format (default sweet-rl)')
          .addChoices(...EXPORT_FORMATS.map((f) => ({ name: f, value: f }))),
      )
      .addStringOption((o) =>
        o
          .setName('kind')
          .setDescription('Task kind (sweet-rl: one kind per file)')
          .addChoices({ name: 'backend', value: 'backend' }, { name: 'frontend', value: 'frontend' }),
      )
      .addStringOption((o) => o.setName('since').setDescription('Sessions started on or after (e.g. 2026-03-01)'))
      .addStringOption((o) => o.setName('until').setDescription('Sessions started before (e.g. 2026-04-01)'))
      .addStringOption((o) => o.setName('policy').setDescription('Only sessions with this policy version'))
      .addStringOption((o) =>
        o
          .setName('status')
          .setDescription('Session status (default answered)')
          .addChoices(...['answered', 'abandoned', 'expired', 'active'].map((v) => ({ name: v, value: v }))),
      )
      .addIntegerOption((o) =>
        o.setName('min_rating').setDescription('Only sessions rated at least this').setMinValue(1).setMaxValue(5),
      )
      .addStringOption((o) =>
        o
          .setName('source')
          .setDescription(`Who played the collaborator (default ${DEFAULT_DATA_SOURCE})`)
          .addChoices(...DATA_SOURCES.map((v) => ({ name: v, value: v }))),
      )
      .addIntegerOption((o) =>
        o.setName('per_task').setDescription('sweet-rl: tasks with at least K sessions, as K blocks').setMinValue(1),
      )
      .addStringOption((o) =>
        o
          .setName('chat_template')
          .setDescription('sweet-rl: llama3 (default) or chatml')
          .addChoices({ name: 'llama3', value: 'llama3' }, { name: 'chatml', value: 'chatml' }),
      ),
  )
  .addSubcommand((s) =>
    s
      .setName('deploy')
      .setDescription('Deploy a policy version')
      .addStringOption((o) => o.setName('version').setDescription('Version name').setRequired(true))
      .addBooleanOption((o) =>
        o
          .setName('force')
          .setDescription(
            'Operators only: deploy a version trained on erased data (privacy delete) all the same; audited',
          ),
      ),
  )
  .addSubcommand((s) =>
    s
      .setName('rollback')
      .setDescription('Re-deploy the previously deployed policy')
      .addBooleanOption((o) =>
        o
          .setName('force')
          .setDescription(
            'Operators only: deploy a version trained on erased data (privacy delete) all the same; audited',
          ),
      ),
  )
  .addSubcommand((s) => s.setName('pause').setDescription('Stop new sessions from starting'))
  .addSubcommand((s) => s.setName('resume').setDescription('Allow new sessions again'))
  .addSubcommand((s) =>
    s
      .setName('ban')
      .setDescription('Ban a person from sessions')
      .addUserOption((o) => o.setName('user').setDescription('Who').setRequired(true))
      .addStringOption((o) => o.setName('reason').setDescription('Why (kept in the audit log)'))
      .addBooleanOption((o) =>
        o
          .setName('everywhere')
          .setDescription('Ban from every server (operators only; their default); moderators ban in this server'),
      ),
  )
  .addSubcommand((s) =>
    s
      .setName('unban')
      .setDescription('Lift a ban')
      .addUserOption((o) => o.setName('user').setDescription('Who').setRequired(true)),
  )
  .addSubcommand((s) =>
    s
      .setName('flag')
      .setDescription('Flag a session for review (flagged sessions are left out of exports by default)')
      .addStringOption((o) => o.setName('session').setDescription('Session id').setRequired(true))
      .addStringOption((o) => o.setName('reason').setDescription('Why')),
  )
  .addSubcommand((s) => s.setName('flags').setDescription('List the open flags'))
  .addSubcommand((s) =>
    s
      .setName('resolve')
      .setDescription('Resolve (close) a flag')
      .addStringOption((o) => o.setName('flag').setDescription('Flag id (see /mod flags)').setRequired(true))
      .addStringOption((o) => o.setName('reason').setDescription('How it was resolved').setRequired(true)),
  )
  .addSubcommandGroup(experimentGroup)
  .addSubcommandGroup(studyGroup)
  .addSubcommand(participantsSubcommand)
  .addSubcommand(excludeSubcommand)
  .addSubcommand(includeSubcommand)
  .addSubcommand(goldSubcommand)
  .toJSON();

type Handler = (ctx: BotContext, i: ChatInputCommandInteraction) => Promise<void>;

/** The handlers of /mod's subcommand groups, by group. */
const groups: Record<string, Record<string, Handler>> = { experiment: experimentHandlers, study: studyHandlers };

const subcommands: Record<string, Handler> = {
  stats: async (ctx, i) => say(i, formatStats(await ctx.services.stats(waitNotice(i), actorOf(ctx, i)))),

  async flags(ctx, i) {
    const open = await ctx.services.openFlags(actorOf(ctx, i), waitNotice(i));
    if (!open.length) return say(i, 'No open flags.');
    const lines = open.map(
      (f) =>
        `\`${f.id}\` session \`${f.sessionId}\` (${f.createdAt.toISOString().slice(0, 16).replace('T', ' ')}): ${f.reason.slice(0, 200)}`,
    );
    return say(i, `Open flags (${open.length}):\n${lines.join('\n')}`.slice(0, 2000));
  },

  async resolve(ctx, i) {
    const id = i.options.getString('flag', true);
    await ctx.services.resolveFlag(actorOf(ctx, i), id, i.options.getString('reason', true), waitNotice(i));
    return say(i, `Flag \`${id}\` resolved.`);
  },

  async export(ctx, i) {
    if (ctx.options.exportSaltIsDefault) {
      return say(
        i,
        "Exports are refused: EXPORT_SALT is the development default, so the pseudonyms in an export could be reversed. Set EXPORT_SALT to a long random secret (e.g. `openssl rand -hex 32`) in the bot's environment and restart it.",
      );
    }
    const o = i.options;
    const status = o.getString('status');
    const request = {
      format: o.getString('format') ?? 'sweet-rl',
      ...optional('kind', o.getString('kind')),
      ...optional('since', o.getString('since')),
      ...optional('until', o.getString('until')),
      ...optional('policy', o.getString('policy')),
      ...(status ? { status: [status] } : {}),
      ...optional('minRating', o.getInteger('min_rating')),
      ...optional('source', o.getString('source')),
      ...optional('perTask', o.getInteger('per_task')),
      ...optional('chatTemplate', o.getString('chat_template')),
    } as ExportRequestInput;
    const maxBytes = ctx.options.maxExportBytes ?? 8 * 1024 * 1024;
    let r;
    try {
      r = await ctx.services.exportSessions(
        actorOf(ctx, i),
        request,
        {
          salt: ctx.options.exportSalt,
          defaultSalt: !!ctx.options.exportSaltIsDefault,
          maxBytes,
          serverDir: ctx.options.exportDir ?? './data/exports',
          ...(ctx.options.chromiumPath ? { chromiumPath: ctx.options.chromiumPath } : {}),
        },
        waitNotice(i),
      );
    } catch (err) {
      // A bad filter, or a selection the format cannot hold (two kinds in one sweet-rl file): the message says why.
      if (
        err instanceof ExportRequestError ||
        err instanceof ExportError ||
        err instanceof FilterError ||
        err instanceof ChatTemplateError
      )
        return say(i, err.message);
      throw err;
    }
    const what = `${r.sessions} session(s), ${r.turns} turn(s), format ${request.format}`;
    if (r.delivery === 'server') {
      return say(
        i,
        `Export: ${what}. It is ${(r.bytes / 1e3).toFixed(1)} kB${request.format === 'hf' ? ' (a folder)' : ''}, more than a message can carry here, so it was written on the server: \`${r.path}\` (dataset card: \`${r.cardPath}\`).`,
      );
    }
    await i.editReply({
      content: `Export: ${what}. The dataset card is attached too.`,
      files: r.files.map((f) => new AttachmentBuilder(f.data, { name: f.name })),
      allowedMentions: { parse: [] },
    });
  },

  async deploy(ctx, i) {
    const v = await ctx.services.deploy(
      actorOf(ctx, i),
      i.options.getString('version', true),
      waitNotice(i),
      i.options.getBoolean('force') ?? false,
    );
    await ctx.engine.refreshPolicy();
    return say(i, `Deployed ${v.name}. New sessions use it; running sessions keep their policy.`);
  },

  async rollback(ctx, i) {
    const v = await ctx.services.rollback(actorOf(ctx, i), waitNotice(i), i.options.getBoolean('force') ?? false);
    await ctx.engine.refreshPolicy();
    return say(i, `Rolled back: ${v.name} is deployed again.`);
  },

  async pause(ctx, i) {
    await ctx.services.setPaused(actorOf(ctx, i), true, waitNotice(i));
    return say(i, 'Collection paused: no new sessions start. Running sessions continue.');
  },

  async resume(ctx, i) {
    await ctx.services.setPaused(actorOf(ctx, i), false, waitNotice(i));
    return say(i, 'Collection resumed.');
  },

  async ban(ctx, i) {
    const user = i.options.getUser('user', true);
    // An operator's ban holds everywhere unless they say otherwise; a moderator's in their guild.
    const everywhere = i.options.getBoolean('everywhere') ?? actorOf(ctx, i).operator;
    const threads = await ctx.services.ban(
      actorOf(ctx, i),
      user.id,
      i.options.getString('reason'),
      waitNotice(i),
      everywhere,
    );
    for (const t of threads) await ctx.threads.close(t, 'This session was ended by a moderator.');
    return say(i, `Banned <@${user.id}>${threads.length ? ' and ended their running session' : ''}.`);
  },

  async unban(ctx, i) {
    const user = i.options.getUser('user', true);
    const done = await ctx.services.unban(actorOf(ctx, i), user.id, waitNotice(i));
    return say(i, done ? `Unbanned <@${user.id}>.` : `<@${user.id}> was not banned.`);
  },

  async flag(ctx, i) {
    const session = i.options.getString('session', true).trim();
    const id = await ctx.services.flag(
      actorOf(ctx, i),
      session,
      i.options.getString('reason') ?? 'flagged by a moderator',
      waitNotice(i),
    );
    return say(i, `Flagged (flag ${id}).`);
  },
};

export const mod: SlashCommand = {
  definition,
  async execute(ctx, i) {
    const authority = authorityOf(ctx.options, i);
    const name = i.options.getSubcommand();
    if (!authority) {
      await i.reply({
        content: 'This command is for moderators (Manage Server permission or the moderator role).',
        flags: MessageFlags.Ephemeral,
      });
      return;
    }
    if (!mayRun(authority, name, i.options.getSubcommandGroup(false))) {
      await i.reply({
        content:
          'This command acts on every server, so it is for operators only. Moderators can use stats, export, ban, unban, flag, flags, resolve and study status within this server.',
        flags: MessageFlags.Ephemeral,
      });
      return;
    }
    if (!(await ack(ctx, i, 'reply'))) return;
    await ctx.services.recordRole(i.user.id, authority, waitNotice(i));
    const group = i.options.getSubcommandGroup(false);
    const run = group ? groups[group]?.[name] : (subcommands[name] ?? participantHandlers[name]);
    if (!run) return say(i, 'Unknown moderator command.');
    try {
      await run(ctx, i);
    } catch (err) {
      if (err instanceof PolicyError || err instanceof ModerationError) return say(i, err.message);
      throw err;
    }
  },
};

/** The actor behind a /mod interaction (execute has checked there is one). */
function actorOf(ctx: BotContext, i: ChatInputCommandInteraction) {
  return actorFor(authorityOf(ctx.options, i) ?? 'moderator', i);
}

/** An option the moderator gave, as a request field; nothing when they did not. */
function optional<K extends string, V>(key: K, value: V | null): { [P in K]?: V } {
  return (value === null ? {} : { [key]: value }) as { [P in K]?: V };
}
