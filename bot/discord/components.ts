// Buttons and modals: the consent Accept button (which then starts the session asked for), the 1-5 rating
// buttons, and the comment button with its modal. Custom ids carry what the click is about
// (`consent:accept:<kind>[:<study>:<version>]`, `rate:<session>:<n>`, `comment:<session>`).
import {
  LabelBuilder,
  MessageFlags,
  ModalBuilder,
  TextInputBuilder,
  TextInputStyle,
  type ButtonInteraction,
  type ModalSubmitInteraction,
} from 'discord.js';
import { isPayPlatform, PAY_PLATFORMS, RefusedError, TurnRejectedError } from '../session/engine.ts';
import { StudyError } from '../../prisma/study-store.ts';
import { ack, hooksFor, personOf, say, type BotContext } from './context.ts';
import { startSession } from './commands/task.ts';
import { onPreferenceButton } from './commands/compare.ts';

type ButtonHandler = (
  ctx: BotContext,
  i: ButtonInteraction,
  a: string | undefined,
  b: string | undefined,
) => Promise<void>;

const buttons: Record<string, ButtonHandler> = {
  pref: onPreferenceButton,
  async comment(_ctx, i, sessionId) {
    // A modal must be the first answer to the click: no deferral, no database before it.
    const modal = new ModalBuilder()
      .setCustomId(`comment:${sessionId}`)
      .setTitle('Comment on the session')
      .addLabelComponents(
        new LabelBuilder()
          .setLabel('Your comment (optional)')
          .setTextInputComponent(
            new TextInputBuilder()
              .setCustomId('comment')
              .setStyle(TextInputStyle.Paragraph)
              .setMaxLength(1000)
              .setRequired(false),
          ),
      );
    await i.showModal(modal);
  },

  async consent(ctx, i, what, kind) {
    if (what !== 'accept') return;
    if (!(await ack(ctx, i, 'update'))) return;
    const [, , , studyId, version] = i.customId.split(':');
    try {
      await ctx.engine.acceptConsent(
        personOf(i),
        studyId && version ? { studyId, version: Number(version) } : undefined,
        hooksFor(i),
      );
    } catch (err) {
      if (err instanceof StudyError) return void (await i.editReply({ content: err.message, components: [] }));
      throw err;
    }
    await i.editReply({ content: 'Thank you! Starting your session…', components: [] });
    return startSession(ctx, i, kind === 'backend' || kind === 'frontend' ? kind : null);
  },

  async payid(_ctx, i, platform, kind) {
    // A modal must be the first answer to the click; its submission comes back to onModal.
    if (!platform || !isPayPlatform(platform)) return;
    const label = PAY_PLATFORMS[platform].label;
    await i.showModal(
      new ModalBuilder()
        .setCustomId(`payid:${platform}:${kind ?? 'any'}`)
        .setTitle(label)
        .addLabelComponents(
          new LabelBuilder()
            .setLabel(`Your ${label}`)
            .setTextInputComponent(
              new TextInputBuilder()
                .setCustomId('id')
                .setStyle(TextInputStyle.Short)
                .setMinLength(1)
                .setMaxLength(64)
                .setRequired(true),
            ),
        ),
    );
  },

  async rate(ctx, i, sessionId, value) {
    if (!sessionId || !value) return;
    if (!(await ack(ctx, i, 'update'))) return;
    try {
      await ctx.engine.rate(sessionId, personOf(i), Number(value), hooksFor(i));
    } catch (err) {
      if (err instanceof TurnRejectedError)
        return void (await i.followUp({ content: err.message, flags: MessageFlags.Ephemeral }));
      throw err;
    }
    await i.editReply({
      content: `Thank you: you rated the agent ${value}/5. You can still add a comment.`,
      components: i.message.components.slice(1),
    });
  },
};

export async function onButton(ctx: BotContext, i: ButtonInteraction): Promise<void> {
  const [what, a, b] = i.customId.split(':');
  const handler = what ? buttons[what] : undefined;
  if (!handler)
    return void (await i.reply({ content: 'This button is no longer valid.', flags: MessageFlags.Ephemeral }));
  await handler(ctx, i, a, b);
}

export async function onModal(ctx: BotContext, i: ModalSubmitInteraction): Promise<void> {
  const [what, sessionId, kind] = i.customId.split(':');
  if (what === 'payid') return onPlatformId(ctx, i, sessionId, kind);
  if (what !== 'comment' || !sessionId) return;
  if (!(await ack(ctx, i, 'reply'))) return;
  try {
    await ctx.engine.comment(sessionId, personOf(i), i.fields.getTextInputValue('comment'), hooksFor(i));
  } catch (err) {
    if (err instanceof TurnRejectedError) return say(i, err.message);
    throw err;
  }
  await say(i, 'Thank you for your comment.');
}

/** The platform id typed into the form: stored (refused with the reason when malformed), then the session starts. */
async function onPlatformId(
  ctx: BotContext,
  i: ModalSubmitInteraction,
  platform: string | undefined,
  kind: string | undefined,
): Promise<void> {
  if (!platform || !isPayPlatform(platform)) return;
  if (!(await ack(ctx, i, 'reply'))) return;
  try {
    await ctx.engine.setPlatformId(personOf(i), platform, i.fields.getTextInputValue('id'), hooksFor(i));
  } catch (err) {
    if (err instanceof StudyError || err instanceof RefusedError) return say(i, err.message);
    throw err;
  }
  await say(i, `Thank you: your ${PAY_PLATFORMS[platform].label} is saved. Starting your session…`);
  return startSession(ctx, i, kind === 'backend' || kind === 'frontend' ? kind : null);
}
