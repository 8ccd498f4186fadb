// /privacy: a person's data. `delete` removes their data by identity (bot/privacy.ts: rows, audit mentions, export rows)
// and deletes their session threads with the bot's messages there, then shows the receipt; `withdraw` withdraws
// consent without deleting (their sessions leave no export or training set from then on).
import { SlashCommandBuilder } from 'discord.js';
import { formatReceipt } from '../../privacy.ts';
import { ack, hooksFor, say, waitNotice } from '../context.ts';
import type { SlashCommand } from './types.ts';

export const privacy: SlashCommand = {
  definition: new SlashCommandBuilder()
    .setName('privacy')
    .setDescription('Your data')
    .addSubcommand((s) =>
      s.setName('delete').setDescription('Withdraw your consent and delete all your sessions, ratings and messages'),
    )
    .addSubcommand((s) =>
      s.setName('withdraw').setDescription('Withdraw your consent; your past sessions stay but are no longer used'),
    )
    .toJSON(),
  async execute(ctx, i) {
    if (!(await ack(ctx, i, 'reply'))) return;
    const sub = i.options.getSubcommand();
    if (sub === 'withdraw') {
      const done = await ctx.services.withdrawConsent(i.user.id, waitNotice(i));
      return say(
        i,
        done
          ? 'Your consent is withdrawn: your sessions will not be exported or used for training. Use /privacy delete to remove them too.'
          : 'You had not given consent.',
      );
    }
    if (sub !== 'delete') return say(i, 'Unknown command.');
    // End the running session first: stop() waits for a turn being written to be stored, so the deletion
    // below never races an agent turn (which would otherwise write into a deleted session).
    await ctx.engine.stop(i.user.id, hooksFor(i));
    const r = await ctx.services.deleteParticipant(i.user.id, waitNotice(i), i.user.id);
    let threads = 0;
    for (const t of r.threadIds) if (await ctx.threads.remove(t)) threads++;
    return say(
      i,
      `Your consent is withdrawn and your data deleted.\n${formatReceipt({ ...r, threadIds: r.threadIds.slice(0, threads) })}\nYou can accept again any time with /task start.`,
    );
  },
};
