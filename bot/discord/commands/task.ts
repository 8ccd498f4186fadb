// /task start|stop|status: a person's own session. Starting checks consent first (the Accept button comes back
// to startSession), opens a private thread, shows the hidden information privately, then lets the agent speak.
import {
  ChannelType,
  MessageFlags,
  SlashCommandBuilder,
  type ChatInputCommandInteraction,
  type RepliableInteraction,
} from 'discord.js';
import type { TaskKind } from '../../../tasks/model.ts';
import { RefusedError } from '../../session/engine.ts';
import { ack, hooksFor, personOf, say, type BotContext } from '../context.ts';
import { consentMessage, hiddenInfoParts, platformIdMessage } from '../present.ts';
import { postTo, threadView } from '../thread-view.ts';
import type { SlashCommand } from './types.ts';

const definition = new SlashCommandBuilder()
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
  .addSubcommand((s) => s.setName('status').setDescription('Show your current session'))
  .toJSON();

/** Starts a session for the person behind `i` (already acknowledged), or asks for consent first. */
export async function startSession(ctx: BotContext, i: RepliableInteraction, kind: TaskKind | null): Promise<void> {
  const hooks = hooksFor(i);
  const admitted = await ctx.engine.admission(
    personOf(i),
    { guildId: i.guildId ?? undefined, channelId: i.channelId },
    hooks,
  );
  if ('refused' in admitted) return say(i, admitted.message);
  if ('needsConsent' in admitted)
    return say(i, consentMessage(admitted.consent?.text ?? ctx.options.consentText, kind, admitted.consent));
  if ('needsPlatformId' in admitted) return say(i, platformIdMessage(admitted, kind));
  const channel = i.channel;
  if (!channel || channel.type !== ChannelType.GuildText) {
    return say(i, 'Please use /task start in a text channel of the server (sessions run in private threads).');
  }
  let started;
  try {
    started = await ctx.engine.start(
      personOf(i),
      kind,
      { guildId: i.guildId ?? undefined, channelId: channel.id },
      hooks,
      admitted,
    );
  } catch (err) {
    if (err instanceof RefusedError) return say(i, err.message);
    throw err;
  }
  const thread = await channel.threads.create({
    name: `${started.kind} session ${started.sessionId.slice(0, 8)}`,
    type: ChannelType.PrivateThread,
    invitable: false,
    autoArchiveDuration: 1440,
  });
  await thread.members.add(i.user.id);
  await ctx.engine.attachThread(started.sessionId, thread.id, hooks);
  ctx.threads.remember(thread.id, started.sessionId, i.user.id);
  const parts = hiddenInfoParts(started.view, started.targetPng, thread.id);
  await say(i, { ...parts[0]!, components: [] });
  for (const part of parts.slice(1)) await i.followUp({ ...part, flags: MessageFlags.Ephemeral });
  await postTo(
    thread,
    {
      content: `<@${i.user.id}> Here is your ${started.kind} session with the agent (${started.blind ? 'agent version not shown during an experiment' : `policy ${started.policyName}`}). Your request, as the agent sees it:\n> ${started.description.replace(/\n/g, '\n> ')}`,
      // Only the person is pinged (the task text could hold a mention).
      allowedMentions: { users: [i.user.id] },
    },
    `intro:${started.sessionId}`,
  );
  await ctx.engine.advance(started.sessionId, threadView(thread));
}

const subcommands: Record<string, (ctx: BotContext, i: ChatInputCommandInteraction) => Promise<void>> = {
  start: (ctx, i) => startSession(ctx, i, (i.options.getString('kind') as TaskKind | null) ?? null),

  async stop(ctx, i) {
    const s = await ctx.engine.stop(i.user.id, hooksFor(i));
    if (!s) return say(i, 'You have no session running.');
    await ctx.threads.close(s.threadId, 'You ended this session.');
    return say(i, 'Your session has ended. Thank you! Start another with /task start.');
  },

  async status(ctx, i) {
    const st = await ctx.engine.status(i.user.id, hooksFor(i));
    if (!st.active) return say(i, `You have no session running. Finished sessions: ${st.answered}.`);
    const a = st.active;
    const agentTurns = a.turns.filter((t) => t.role === 'agent').length;
    const waiting = ctx.engine.isBusy(a.id)
      ? 'the agent is writing'
      : agentTurns > 0 && a.turns.at(-1)?.role === 'agent'
        ? 'your turn to answer'
        : 'waiting for the agent';
    // The hidden information again, privately: the person may have lost the first reply.
    const hidden = await ctx.engine.hiddenInfo(a.id);
    await say(
      i,
      [
        `Session \`${a.id}\` (${a.task.kind})${a.threadId ? ` in <#${a.threadId}>` : ''}`,
        `Agent messages: ${agentTurns} of ${ctx.engine.options.maxTurns}; ${waiting}.`,
        `Policy: ${a.experimentId || a.goldSourceId ? 'not shown during an experiment' : (a.policyVersion?.name ?? '—')}. Finished sessions: ${st.answered}.`,
      ].join('\n'),
    );
    for (const part of hiddenInfoParts(hidden.view, hidden.targetPng, null))
      await i.followUp({ ...part, flags: MessageFlags.Ephemeral });
  },
};

export const task: SlashCommand = {
  definition,
  async execute(ctx, i) {
    if (!(await ack(ctx, i, 'reply'))) return;
    const run = subcommands[i.options.getSubcommand()];
    return run ? run(ctx, i) : say(i, 'Unknown command.');
  },
};
