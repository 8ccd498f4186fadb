// /mod participants, exclude-training, include-training and gold: collaborator quality (tasks/quality.ts), gold
// checks (bot/gold.ts) and a moderator's control over whose sessions the trainer uses. Registered by mod.ts, which
// has already checked the moderator permission and acknowledged the interaction. Exclusions keep the sessions
// (and exports keep them).
import type { ChatInputCommandInteraction, SlashCommandSubcommandBuilder } from 'discord.js';
import { QualityError } from '../../../../prisma/quality-store.ts';
import { GoldError } from '../../../gold.ts';
import { formatSignals } from '../../../../tasks/quality.ts';
import { say, waitNotice, type BotContext } from '../../context.ts';

/** How many people the listing shows (a Discord message holds 2000 characters). */
const LISTED = 15;

export function participantsSubcommand(s: SlashCommandSubcommandBuilder): SlashCommandSubcommandBuilder {
  return s.setName('participants').setDescription('People with their quality score and signals (lowest score first)');
}

export function excludeSubcommand(s: SlashCommandSubcommandBuilder): SlashCommandSubcommandBuilder {
  return s
    .setName('exclude-training')
    .setDescription("Leave a person's sessions out of training (they are kept, and exported)")
    .addUserOption((o) => o.setName('user').setDescription('Who').setRequired(true))
    .addStringOption((o) => o.setName('reason').setDescription('Why (kept in the audit log)'));
}

export function includeSubcommand(s: SlashCommandSubcommandBuilder): SlashCommandSubcommandBuilder {
  return s
    .setName('include-training')
    .setDescription("Let a person's sessions into training again")
    .addUserOption((o) => o.setName('user').setDescription('Who').setRequired(true));
}

export function goldSubcommand(s: SlashCommandSubcommandBuilder): SlashCommandSubcommandBuilder {
  return s
    .setName('gold')
    .setDescription('Share of new backend sessions that are gold checks (a known agent replayed)')
    .addIntegerOption((o) =>
      o
        .setName('share')
        .setDescription('Percent of new sessions (0 turns gold checks off)')
        .setRequired(true)
        .setMinValue(0)
        .setMaxValue(100),
    );
}

type Handler = (ctx: BotContext, i: ChatInputCommandInteraction) => Promise<void>;

export const participantHandlers: Record<string, Handler> = {
  async participants(ctx, i) {
    const people = await ctx.services.participants(waitNotice(i));
    if (people.length === 0) return say(i, 'Nobody has taken part yet.');
    const lines = people.slice(0, LISTED).map((p) => {
      const score =
        p.score === null ? 'no finished session' : `quality ${p.score.toFixed(2)} over ${p.sessions} session(s)`;
      const marks = [p.excluded ? `excluded from training by <@${p.excluded.by}>` : '', p.banned ? 'banned' : '']
        .filter(Boolean)
        .join(', ');
      return `<@${p.externalId}>: ${score}; signals: ${formatSignals(p.signals)}${marks ? ` — ${marks}` : ''}`;
    });
    const more =
      people.length > LISTED
        ? `\n…and ${people.length - LISTED} more (\`sweetloop export\` carries every session).`
        : '';
    return say(i, `Participants (${people.length}), lowest quality first:\n${lines.join('\n')}${more}`);
  },

  async 'exclude-training'(ctx, i) {
    const user = i.options.getUser('user', true);
    try {
      const done = await ctx.services.excludeFromTraining(
        i.user.id,
        user.id,
        i.options.getString('reason'),
        waitNotice(i),
      );
      return say(
        i,
        done
          ? `<@${user.id}>'s sessions are left out of training from the next run on (they stay in exports).`
          : `<@${user.id}> was already excluded from training.`,
      );
    } catch (err) {
      if (err instanceof QualityError) return say(i, err.message);
      throw err;
    }
  },

  async gold(ctx, i) {
    const share = i.options.getInteger('share', true);
    try {
      const before = await ctx.services.setGoldShare(i.user.id, share / 100, waitNotice(i));
      return say(
        i,
        `Gold checks: ${share}% of new backend sessions (was ${Math.round(before * 100)}%). They replay a known agent session of the task (played with a simulated collaborator); tasks without one get a normal session.`,
      );
    } catch (err) {
      if (err instanceof GoldError) return say(i, err.message);
      throw err;
    }
  },

  async 'include-training'(ctx, i) {
    const user = i.options.getUser('user', true);
    const done = await ctx.services.includeInTraining(i.user.id, user.id, waitNotice(i));
    return say(
      i,
      done ? `<@${user.id}>'s sessions are used for training again.` : `<@${user.id}> was not excluded from training.`,
    );
  },
};
