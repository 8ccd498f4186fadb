// /privacy delete: a person withdraws consent and their data is deleted (audited); a running session's thread
// is closed first.
import { SlashCommandBuilder } from 'discord.js';
import { ack, hooksFor, say, waitNotice } from '../context.ts';
import type { SlashCommand } from './types.ts';

export const privacy: SlashCommand = {
  definition: new SlashCommandBuilder()
    .setName('privacy')
    .setDescription('Your data')
    .addSubcommand((s) => s.setName('delete').setDescription('Withdraw your consent and delete all your sessions and ratings'))
    .toJSON(),
  async execute(ctx, i) {
    if (!(await ack(ctx, i, 'reply'))) return;
    if (i.options.getSubcommand() !== 'delete') return say(i, 'Unknown command.');
    const before = await ctx.engine.status(i.user.id, hooksFor(i));
    if (before.active?.threadId) await ctx.threads.close(before.active.threadId, "This session was deleted at the participant's request.");
    const r = await ctx.services.deleteParticipant(i.user.id, waitNotice(i));
    return say(i, `Your consent is withdrawn and your data deleted: ${r.sessions} session(s) and ${r.ratings} rating(s). You can accept again any time with /task start.`);
  },
};
