// /compare: a person is shown two finished sessions of the same task (agents played with simulated
// collaborators, see prisma/preference-store.ts) and says which agent helped more with the buttons
// `pref:<comparison>:a|b|tie`. Stored, exported (`sweetloop export-preferences`), and a Bradley-Terry pair.
import {
  ActionRowBuilder,
  ButtonBuilder,
  ButtonStyle,
  MessageFlags,
  SlashCommandBuilder,
  type ButtonInteraction,
} from 'discord.js';
import {
  PREFERENCE_CHOICES,
  PreferenceError,
  type ComparedSession,
  type PreferenceChoice,
} from '../../../prisma/preference-store.ts';
import { splitText } from '../../split.ts';
import { ack, say, waitNotice, type BotContext } from '../context.ts';
import type { SlashCommand } from './types.ts';

function transcript(label: string, s: ComparedSession): string {
  const lines = s.turns.map((t) => `**${t.role === 'agent' ? 'Agent' : 'Collaborator'}:** ${t.content}`);
  return `__**Session ${label}**__\n${lines.join('\n')}`;
}

const CHOICE_LABEL: Record<PreferenceChoice, string> = {
  a: 'Agent A helped more',
  b: 'Agent B helped more',
  tie: 'About the same',
};

export const compare: SlashCommand = {
  definition: new SlashCommandBuilder()
    .setName('compare')
    .setDescription('Judge which of two agents helped more on the same task')
    .toJSON(),
  async execute(ctx, i) {
    if (!(await ack(ctx, i, 'reply'))) return;
    let c;
    try {
      c = await ctx.services.offerComparison(i.user.id, waitNotice(i), i.guildId);
    } catch (err) {
      if (err instanceof PreferenceError) return say(i, err.message);
      throw err;
    }
    if (!c)
      return say(
        i,
        'There is nothing to compare right now: no task has two finished sessions you have not judged. Thank you!',
      );
    await say(
      i,
      `**Which agent helped more?** Both worked on this request:\n> ${c.taskDescription.replace(/\n/g, '\n> ')}`.slice(
        0,
        2000,
      ),
    );
    for (const part of [...splitText(transcript('A', c.a)), ...splitText(transcript('B', c.b))])
      await i.followUp({ content: part, flags: MessageFlags.Ephemeral | MessageFlags.SuppressEmbeds });
    await i.followUp({
      content: 'Which agent helped its collaborator more?',
      flags: MessageFlags.Ephemeral,
      components: [
        new ActionRowBuilder<ButtonBuilder>().addComponents(
          PREFERENCE_CHOICES.map((choice) =>
            new ButtonBuilder()
              .setCustomId(`pref:${c.preferenceId}:${choice}`)
              .setLabel(CHOICE_LABEL[choice])
              .setStyle(choice === 'tie' ? ButtonStyle.Secondary : ButtonStyle.Primary),
          ),
        ),
      ],
    });
  },
};

/** The `pref:<comparison>:<choice>` button. */
export async function onPreferenceButton(
  ctx: BotContext,
  i: ButtonInteraction,
  preferenceId: string | undefined,
  choice: string | undefined,
): Promise<void> {
  if (!preferenceId || !PREFERENCE_CHOICES.includes(choice as PreferenceChoice)) return;
  if (!(await ack(ctx, i, 'update'))) return;
  try {
    await ctx.services.recordPreference(i.user.id, preferenceId, choice as PreferenceChoice, waitNotice(i));
  } catch (err) {
    if (err instanceof PreferenceError)
      return void (await i.followUp({ content: err.message, flags: MessageFlags.Ephemeral }));
    throw err;
  }
  await i.editReply({
    content: `Thank you: you chose "${CHOICE_LABEL[choice as PreferenceChoice]}". Run /compare again for another pair.`,
    components: [],
  });
}
