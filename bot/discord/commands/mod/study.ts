// /mod study status [name]: a study's progress, the same text as `sweetloop study show` (bot/study-progress.ts
// formatStudy). Operators see every study; a guild's moderators the studies bound to their guild (or one of its
// channels) and the unbound ones (bot/study-progress.ts studyVisibleTo), so a study elsewhere is reported as not
// found rather than shown. Registered by mod.ts, which has checked the permission and acknowledged the interaction.
import type { ChatInputCommandInteraction, SlashCommandSubcommandGroupBuilder } from 'discord.js';
import { formatStudy } from '../../../study-progress.ts';
import { actorFor, authorityOf } from '../../permissions.ts';
import { say, waitNotice, type BotContext } from '../../context.ts';

/** A Discord message holds 2000 characters. */
const MESSAGE_LIMIT = 2000;
/** Room kept for the line saying how many studies did not fit. */
const SUFFIX_ROOM = 80;

export function studyGroup(g: SlashCommandSubcommandGroupBuilder): SlashCommandSubcommandGroupBuilder {
  return g
    .setName('study')
    .setDescription('Studies (created with `sweetloop study create`)')
    .addSubcommand((s) =>
      s
        .setName('status')
        .setDescription(
          "A study's progress: tasks filled, sessions per arm, people active, active time, projected completion",
        )
        .addStringOption((o) =>
          o.setName('name').setDescription('The study (default: every open or paused study you may see)'),
        ),
    );
}

type Handler = (ctx: BotContext, i: ChatInputCommandInteraction) => Promise<void>;

export const studyHandlers: Record<string, Handler> = {
  async status(ctx, i) {
    const name = i.options.getString('name')?.trim() || null;
    const actor = actorFor(authorityOf(ctx.options, i) ?? 'moderator', i);
    const guildChannels = new Set(i.guild?.channels.cache.keys() ?? []);
    const found = await ctx.services.studyStatus(actor, name, guildChannels, waitNotice(i));
    if (found.length === 0) {
      return say(
        i,
        name
          ? `No study named "${name}" that you may see here.`
          : 'No open or paused study that you may see here. Name a study to see a closed one.',
      );
    }
    const blocks = found.map((f) => `\`\`\`\n${formatStudy(f.study, f.progress)}\n\`\`\``);
    const parts: string[] = [];
    for (const b of blocks) {
      if ([...parts, b].join('\n').length > MESSAGE_LIMIT - SUFFIX_ROOM) break;
      parts.push(b);
    }
    if (parts.length === 0) parts.push(`${blocks[0]!.slice(0, MESSAGE_LIMIT - SUFFIX_ROOM)}…\n\`\`\``);
    const left = found.length - parts.length;
    return say(i, parts.join('\n') + (left > 0 ? `\n…and ${left} more: name one with /mod study status name:` : ''));
  },
};
