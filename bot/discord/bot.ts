// The Discord channel: slash commands, private session threads, buttons and modals, on top of the session
// engine. Every interaction is acknowledged (deferred) before anything slow, so Discord's 3-second limit
// holds whatever the model or the database do; messages in session threads are the person's turns.
import { PassThrough } from 'node:stream';
import {
  AttachmentBuilder,
  ChannelType,
  Client,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  LabelBuilder,
  MessageFlags,
  ModalBuilder,
  Partials,
  TextInputBuilder,
  TextInputStyle,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  type Interaction,
  type Message,
  type ModalSubmitInteraction,
  type RepliableInteraction,
  type ThreadChannel,
} from 'discord.js';
import type { Database } from '../../prisma/db.ts';
import type { Session } from '../../prisma/generated/client.ts';
import { UniqueViolationError, toDatabaseError } from '../../prisma/errors.ts';
import type { Logger } from '../../bin/log.ts';
import type { TaskKind } from '../../tasks/model.ts';
import { acceptConsent, hasConsent, withdrawAndDelete } from '../consent.ts';
import { RefusedError, TurnRejectedError, type AgentStep, type Hooks, type Person, type SessionEngine } from '../engine.ts';
import { ban, flagSession, formatStats, ModerationError, setPaused, stats, unban } from '../moderation.ts';
import { deployPolicyByName, PolicyError, rollbackPolicy } from '../../prisma/policy-store.ts';
import { withDbRetry } from '../retry.ts';
import { splitText } from '../split.ts';
import { commandDefinitions, MODERATOR_PERMISSION } from './commands.ts';
import { agentStepParts, consentMessage, hiddenInfoParts, ratingMessage, resultText, type Part } from './present.ts';

export interface DiscordBotOptions {
  token: string;
  /** REST base, e.g. https://discord.com/api or a local fake. */
  apiBase: string;
  /** Guilds to register commands in (instant); empty: global commands. */
  guildIds: string[];
  consentText: string;
  exportSalt: string;
  /** How often idle sessions are looked for (ms). */
  expiryCheckMs?: number;
  /** Largest export attached to a message (bytes); larger ones must use the CLI. */
  maxExportBytes?: number;
}

const DB_WAIT_MESSAGE = 'The database is unavailable at the moment. Please wait: nothing is lost, and I will continue as soon as it is back.';

export class DiscordBot {
  readonly client: Client;
  private readonly threadSessions = new Map<string, string>();
  private ready: Promise<void> | null = null;
  private stopped = false;
  private pruneTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly engine: SessionEngine,
    private readonly db: Database,
    private readonly options: DiscordBotOptions,
    private readonly log?: Logger,
  ) {
    this.client = new Client({
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent],
      // Threads created before a restart may be unknown to the cache when their first message arrives.
      partials: [Partials.Channel],
      rest: { api: options.apiBase },
    });
    this.client.on(Events.InteractionCreate, (i) => void this.onInteraction(i));
    this.client.on(Events.MessageCreate, (m) => void this.onMessage(m));
    this.client.on(Events.Error, (err) => this.log?.error({ err: err.message }, 'discord client error'));
    this.client.on(Events.ShardDisconnect, (ev, shard) => this.log?.warn({ code: ev.code, shard }, 'gateway disconnected'));
  }

  /** Logs in, registers the commands, finishes what a previous run left, starts idle expiry. */
  async start(): Promise<void> {
    this.ready = new Promise<void>((resolve) => this.client.once(Events.ClientReady, () => resolve()));
    await this.client.login(this.options.token);
    await this.ready;
    const defs = commandDefinitions();
    if (this.options.guildIds.length) {
      for (const g of this.options.guildIds) await this.client.application!.commands.set(defs, g);
    } else {
      await this.client.application!.commands.set(defs);
    }
    this.log?.info({ user: this.client.user?.tag, guilds: this.options.guildIds.length || 'global' }, 'discord bot ready');
    await this.resume();
    this.engine.startExpiry(this.options.expiryCheckMs ?? 60_000, (s) => this.onExpired(s));
    // Redelivery happens within minutes; a week of processed interaction ids is plenty.
    this.pruneTimer = setInterval(() => {
      const cutoff = new Date(Date.now() - 7 * 24 * 3600_000);
      this.db.prisma.processedEvent.deleteMany({ where: { createdAt: { lt: cutoff } } }).catch(() => {});
    }, 3600_000);
    this.pruneTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    await this.client.destroy();
  }

  // ------------------------------------------------------------------------------------------ recovery

  /** Finishes, after a restart, every session the previous run left halfway. */
  async resume(): Promise<void> {
    const work = await this.engine.pendingWork();
    if (work.length) this.log?.info({ count: work.length }, 'resuming sessions');
    for (const w of work) {
      const thread = w.session.threadId ? await this.thread(w.session.threadId) : null;
      if (!thread) {
        this.log?.warn({ session: w.session.id }, 'session thread is gone; cannot resume it here');
        continue;
      }
      this.threadSessions.set(thread.id, w.session.id);
      try {
        if (w.kind === 'agent') await this.runAgent(w.session.id, thread, true);
        else if (w.kind === 'show') await this.show(await this.engine.stepOf(w.turn.id), thread);
        else await this.finish(w.session.id, thread);
      } catch (err) {
        this.log?.error({ err: (err as Error).message, session: w.session.id }, 'cannot resume session');
      }
    }
  }

  private async thread(id: string): Promise<ThreadChannel | null> {
    try {
      const c = await this.client.channels.fetch(id);
      return c?.isThread() ? c : null;
    } catch {
      return null;
    }
  }

  // ------------------------------------------------------------------------------------------ interactions

  private async onInteraction(i: Interaction): Promise<void> {
    try {
      if (i.isChatInputCommand()) await this.onCommand(i);
      else if (i.isButton()) await this.onButton(i);
      else if (i.isModalSubmit()) await this.onModal(i);
    } catch (err) {
      this.log?.error({ err: (err as Error).message, stack: (err as Error).stack }, 'interaction failed');
      if (i.isRepliable()) await this.say(i, `Something went wrong: ${(err as Error).message}`).catch(() => {});
    }
  }

  /** Acknowledges the interaction and records it; false when it was handled before (a redelivery). */
  private async ack(i: RepliableInteraction, kind: 'reply' | 'update'): Promise<boolean> {
    try {
      if (kind === 'reply') await i.deferReply({ flags: MessageFlags.Ephemeral });
      else await (i as ButtonInteraction).deferUpdate();
    } catch (err) {
      // 40060: already acknowledged; 10062: unknown interaction. Either way someone else handled it.
      if (err instanceof DiscordAPIError && (err.code === 40060 || err.code === 10062)) return false;
      throw err;
    }
    try {
      await withDbRetry(() => this.db.prisma.processedEvent.create({ data: { id: i.id, kind: `interaction:${i.type}` } }), {
        onWaiting: () => this.say(i, DB_WAIT_MESSAGE),
      });
    } catch (err) {
      if (toDatabaseError(err) instanceof UniqueViolationError) return false;
      throw err;
    }
    return true;
  }

  /** Replies privately, whatever state the interaction is in. */
  private async say(i: RepliableInteraction, content: string | Part): Promise<void> {
    const body = typeof content === 'string' ? { content } : content;
    if (i.deferred || i.replied) await i.editReply(body);
    else await i.reply({ ...body, flags: MessageFlags.Ephemeral });
  }

  private hooksFor(i: RepliableInteraction): Hooks {
    return { onDbWaiting: () => this.say(i, DB_WAIT_MESSAGE) };
  }

  private person(i: Interaction): Person {
    return { externalId: i.user.id, displayName: i.user.globalName ?? i.user.username };
  }

  private async onCommand(i: ChatInputCommandInteraction): Promise<void> {
    if (i.commandName === 'mod') return this.onMod(i);
    if (!(await this.ack(i, 'reply'))) return;
    const sub = i.options.getSubcommand();
    if (i.commandName === 'task' && sub === 'start') return this.startTask(i, (i.options.getString('kind') as TaskKind | null) ?? null);
    if (i.commandName === 'task' && sub === 'stop') {
      const s = await this.engine.stop(i.user.id, this.hooksFor(i));
      if (!s) return this.say(i, 'You have no session running.');
      await this.closeThread(s.threadId, 'You ended this session.');
      return this.say(i, 'Your session has ended. Thank you! Start another with /task start.');
    }
    if (i.commandName === 'task' && sub === 'status') {
      const st = await this.engine.status(i.user.id, this.hooksFor(i));
      if (!st.active) return this.say(i, `You have no session running. Finished sessions: ${st.answered}.`);
      const a = st.active;
      const agentTurns = a.turns.filter((t) => t.role === 'agent').length;
      // The hidden information again, privately: the person may have lost the first reply.
      const hidden = await this.engine.hiddenInfo(a.id);
      await this.say(
        i,
        [
          `Session \`${a.id}\` (${a.task.kind})${a.threadId ? ` in <#${a.threadId}>` : ''}`,
          `Agent messages: ${agentTurns} of ${this.engine.options.maxTurns}; ${this.engine.isBusy(a.id) ? 'the agent is writing' : agentTurns > 0 && a.turns.at(-1)?.role === 'agent' ? 'your turn to answer' : 'waiting for the agent'}.`,
          `Policy: ${a.policyVersion?.name ?? '—'}. Finished sessions: ${st.answered}.`,
        ].join('\n'),
      );
      for (const part of hiddenInfoParts(hidden.view, hidden.targetPng, null)) await i.followUp({ ...part, flags: MessageFlags.Ephemeral });
      return;
    }
    if (i.commandName === 'privacy' && sub === 'delete') {
      const before = await this.engine.status(i.user.id, this.hooksFor(i));
      if (before.active?.threadId) await this.closeThread(before.active.threadId, 'This session was deleted at the participant\'s request.');
      const r = await withDbRetry(() => withdrawAndDelete(this.db.prisma, i.user.id), { onWaiting: () => this.say(i, DB_WAIT_MESSAGE) });
      return this.say(i, `Your consent is withdrawn and your data deleted: ${r.sessions} session(s) and ${r.ratings} rating(s). You can accept again any time with /task start.`);
    }
    return this.say(i, 'Unknown command.');
  }

  private async startTask(i: RepliableInteraction, kind: TaskKind | null): Promise<void> {
    const hooks = this.hooksFor(i);
    const p = await this.engine.participant(i.user.id, hooks);
    if (p?.banned) return this.say(i, 'You are not allowed to take part in sessions.');
    if (!hasConsent(p)) return this.say(i, consentMessage(this.options.consentText, kind));
    const channel = i.channel;
    if (!channel || channel.type !== ChannelType.GuildText) {
      return this.say(i, 'Please use /task start in a text channel of the server (sessions run in private threads).');
    }
    let started;
    try {
      started = await this.engine.start(this.person(i), kind, { guildId: i.guildId ?? undefined, channelId: channel.id }, hooks);
    } catch (err) {
      if (err instanceof RefusedError) return this.say(i, err.message);
      throw err;
    }
    const thread = await channel.threads.create({
      name: `${started.kind} session ${started.sessionId.slice(0, 8)}`,
      type: ChannelType.PrivateThread,
      invitable: false,
      autoArchiveDuration: 1440,
    });
    await thread.members.add(i.user.id);
    await this.engine.attachThread(started.sessionId, thread.id, hooks);
    this.threadSessions.set(thread.id, started.sessionId);
    const parts = hiddenInfoParts(started.view, started.targetPng, thread.id);
    await this.say(i, { ...parts[0]!, components: [] });
    for (const part of parts.slice(1)) await i.followUp({ ...part, flags: MessageFlags.Ephemeral });
    await this.post(thread, {
      content: `<@${i.user.id}> Here is your ${started.kind} session with the agent (policy ${started.policyName}). Your request, as the agent sees it:\n> ${started.description.replace(/\n/g, '\n> ')}`,
    });
    await this.runAgent(started.sessionId, thread, false);
  }

  private async onButton(i: ButtonInteraction): Promise<void> {
    const [what, a, b] = i.customId.split(':');
    if (what === 'comment') {
      // A modal must be the first answer to the click: no deferral, no database before it.
      const modal = new ModalBuilder()
        .setCustomId(`comment:${a}`)
        .setTitle('Comment on the session')
        .addLabelComponents(
          new LabelBuilder()
            .setLabel('Your comment (optional)')
            .setTextInputComponent(new TextInputBuilder().setCustomId('comment').setStyle(TextInputStyle.Paragraph).setMaxLength(1000).setRequired(false)),
        );
      await i.showModal(modal);
      return;
    }
    if (what === 'consent' && a === 'accept') {
      if (!(await this.ack(i, 'update'))) return;
      await withDbRetry(() => acceptConsent(this.db.prisma, i.user.id, i.user.globalName ?? i.user.username), {
        onWaiting: () => this.say(i, DB_WAIT_MESSAGE),
      });
      await this.db.prisma.auditLog.create({ data: { actor: i.user.id, action: 'consent.accept', target: null } }).catch(() => {});
      await i.editReply({ content: 'Thank you! Starting your session…', components: [] });
      return this.startTask(i, b === 'backend' || b === 'frontend' ? b : null);
    }
    if (what === 'rate' && a && b) {
      if (!(await this.ack(i, 'update'))) return;
      try {
        await this.engine.rate(a, this.person(i), Number(b), this.hooksFor(i));
      } catch (err) {
        if (err instanceof TurnRejectedError) return void (await i.followUp({ content: err.message, flags: MessageFlags.Ephemeral }));
        throw err;
      }
      await i.editReply({ content: `Thank you: you rated the agent ${b}/5. You can still add a comment.`, components: i.message.components.slice(1) });
      return;
    }
    await i.reply({ content: 'This button is no longer valid.', flags: MessageFlags.Ephemeral });
  }

  private async onModal(i: ModalSubmitInteraction): Promise<void> {
    const [what, sessionId] = i.customId.split(':');
    if (what !== 'comment' || !sessionId) return;
    if (!(await this.ack(i, 'reply'))) return;
    const text = i.fields.getTextInputValue('comment');
    try {
      await this.engine.comment(sessionId, this.person(i), text, this.hooksFor(i));
    } catch (err) {
      if (err instanceof TurnRejectedError) return this.say(i, err.message);
      throw err;
    }
    await this.say(i, 'Thank you for your comment.');
  }

  // ------------------------------------------------------------------------------------------ moderators

  private async onMod(i: ChatInputCommandInteraction): Promise<void> {
    // Checked before anything else and without the database: a refusal must not depend on it.
    if (!i.memberPermissions?.has(MODERATOR_PERMISSION)) {
      await i.reply({ content: 'This command is for moderators (Manage Server permission).', flags: MessageFlags.Ephemeral });
      return;
    }
    if (!(await this.ack(i, 'reply'))) return;
    const actor = i.user.id;
    const sub = i.options.getSubcommand();
    const retry = <T>(fn: () => Promise<T>) => withDbRetry(fn, { onWaiting: () => this.say(i, DB_WAIT_MESSAGE) });
    try {
      switch (sub) {
        case 'stats':
          return this.say(i, formatStats(await retry(() => stats(this.db.prisma))));
        case 'export':
          return this.exportTo(i, (i.options.getString('format') as 'sweet-rl' | 'jsonl' | null) ?? 'sweet-rl');
        case 'deploy': {
          const v = await retry(() => deployPolicyByName(this.db, actor, i.options.getString('version', true), { notify: 'best-effort' }));
          await this.engine.deps.policies.refresh();
          return this.say(i, `Deployed ${v.name}. New sessions use it; running sessions keep their policy.`);
        }
        case 'rollback': {
          const v = await retry(() => rollbackPolicy(this.db, actor, { notify: 'best-effort' }));
          await this.engine.deps.policies.refresh();
          return this.say(i, `Rolled back: ${v.name} is deployed again.`);
        }
        case 'pause':
          await retry(() => setPaused(this.db.prisma, actor, true));
          return this.say(i, 'Collection paused: no new sessions start. Running sessions continue.');
        case 'resume':
          await retry(() => setPaused(this.db.prisma, actor, false));
          return this.say(i, 'Collection resumed.');
        case 'ban': {
          const user = i.options.getUser('user', true);
          const ended = await retry(() => ban(this.db.prisma, actor, user.id, i.options.getString('reason')));
          for (const id of ended) {
            const s = await this.db.prisma.session.findUnique({ where: { id } });
            await this.closeThread(s?.threadId ?? null, 'This session was ended by a moderator.');
          }
          return this.say(i, `Banned <@${user.id}>${ended.length ? ` and ended their running session` : ''}.`);
        }
        case 'unban': {
          const user = i.options.getUser('user', true);
          const done = await retry(() => unban(this.db.prisma, actor, user.id));
          return this.say(i, done ? `Unbanned <@${user.id}>.` : `<@${user.id}> was not banned.`);
        }
        case 'flag': {
          const id = await retry(() => flagSession(this.db.prisma, actor, i.options.getString('session', true).trim(), i.options.getString('reason') ?? 'flagged by a moderator'));
          return this.say(i, `Flagged (flag ${id}).`);
        }
      }
    } catch (err) {
      if (err instanceof PolicyError || err instanceof ModerationError) return this.say(i, err.message);
      throw err;
    }
    return this.say(i, 'Unknown moderator command.');
  }

  private async exportTo(i: ChatInputCommandInteraction, format: 'sweet-rl' | 'jsonl'): Promise<void> {
    const { exportSessions } = await import('../export/export.ts');
    const max = this.options.maxExportBytes ?? 8 * 1024 * 1024;
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    let size = 0;
    out.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= max) chunks.push(c);
    });
    const result = await withDbRetry(() => exportSessions(this.db.prisma, { format, salt: this.options.exportSalt }, out), {
      onWaiting: () => this.say(i, DB_WAIT_MESSAGE),
    });
    await this.db.prisma.auditLog.create({ data: { actor: i.user.id, action: 'data.export', target: null, detail: { format, sessions: result.sessions, bytes: size } } });
    if (size > max) {
      return this.say(i, `The export is ${(size / 1e6).toFixed(1)} MB, over the ${(max / 1e6).toFixed(0)} MB a message can carry. Run \`sweetloop export\` on the server instead.`);
    }
    const stamp = new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-');
    await i.editReply({
      content: `Export: ${result.sessions} session(s), ${result.turns} turn(s), format ${format}. The dataset card is attached too.`,
      files: [
        new AttachmentBuilder(Buffer.concat(chunks), { name: `sweetloop-${stamp}.jsonl` }),
        new AttachmentBuilder(Buffer.from(result.cardMarkdown), { name: `sweetloop-${stamp}.README.md` }),
      ],
    });
  }

  // ------------------------------------------------------------------------------------------ threads

  private async sessionOfThread(threadId: string, hooks?: Hooks): Promise<string | null> {
    const cached = this.threadSessions.get(threadId);
    if (cached) return cached;
    const s = await this.engine.sessionByThread(threadId, hooks);
    if (s) this.threadSessions.set(threadId, s.id);
    return s?.id ?? null;
  }

  private async onMessage(m: Message): Promise<void> {
    if (m.author.bot || !m.inGuild()) return;
    let waitingNotice = false;
    let recovered = false;
    const hooks: Hooks = {
      // Several steps may each wait for the database: the person is told once, and once that it is back.
      onDbWaiting: async () => {
        if (waitingNotice) return;
        waitingNotice = true;
        await m.reply(DB_WAIT_MESSAGE).catch(() => {});
      },
      onDbRecovered: async () => {
        if (!waitingNotice || recovered) return;
        recovered = true;
        await m.channel.send('The database is back. Continuing.').catch(() => {});
      },
    };
    try {
      const sessionId = await this.sessionOfThread(m.channelId, hooks);
      if (!sessionId) return;
      const owner = await this.engine.ownerOf(sessionId, hooks);
      if (owner !== m.author.id) return;
      const thread = await this.thread(m.channelId);
      if (!thread) return;
      let r;
      try {
        r = await this.engine.humanTurn(sessionId, m.content, m.id, hooks);
      } catch (err) {
        if (err instanceof TurnRejectedError) return void (await m.reply(err.message).catch(() => {}));
        throw err;
      }
      if (r.duplicate) return;
      await this.runAgent(sessionId, thread, false, hooks);
    } catch (err) {
      this.log?.error({ err: (err as Error).message, message: m.id }, 'thread message failed');
      await m.reply(`Something went wrong: ${(err as Error).message}`).catch(() => {});
    }
  }

  /** The agent writes (typing shown meanwhile); its stored message is then posted, then the end handled. */
  private async runAgent(sessionId: string, thread: ThreadChannel, resumed: boolean, hooks?: Hooks): Promise<void> {
    const typing = setInterval(() => void thread.sendTyping().catch(() => {}), 8_000);
    await thread.sendTyping().catch(() => {});
    let step: AgentStep | null;
    try {
      step = await this.engine.agentStep(sessionId, hooks);
    } catch (err) {
      if (err instanceof TurnRejectedError) {
        await this.post(thread, { content: err.message });
        return;
      }
      throw err;
    } finally {
      clearInterval(typing);
    }
    if (!step) return;
    if (resumed) this.log?.info({ session: sessionId }, 'resumed: agent message after restart');
    await this.show(step, thread);
  }

  private async show(step: AgentStep, thread: ThreadChannel): Promise<void> {
    let lastId = '';
    for (const part of agentStepParts(step)) lastId = (await this.post(thread, part)).id;
    await this.engine.markShown(step.turnId, lastId);
    if (step.answered) await this.finish(step.sessionId, thread);
  }

  private async finish(sessionId: string, thread: ThreadChannel): Promise<void> {
    await thread.sendTyping().catch(() => {});
    try {
      const evaluated = await this.engine.evaluate(sessionId);
      await this.post(thread, { content: resultText(evaluated) });
    } catch (err) {
      // The answer is stored; the next start scores it (pendingWork). The rating need not wait for that.
      this.log?.error({ err: (err as Error).message, session: sessionId }, 'evaluation failed');
      await this.post(thread, { content: `The answer is saved but could not be scored right now (${(err as Error).message}). It will be scored later.` });
    }
    await this.post(thread, ratingMessage(sessionId));
  }

  private async post(channel: ThreadChannel, part: Part): Promise<Message> {
    if (typeof part.content === 'string' && part.content.length > 2000) {
      // Present.ts splits long text; this guards any caller that did not.
      const chunks = splitText(part.content);
      for (const c of chunks.slice(0, -1)) await channel.send({ content: c });
      return channel.send({ ...part, content: chunks.at(-1)! });
    }
    return channel.send(part);
  }

  private async closeThread(threadId: string | null, notice: string): Promise<void> {
    if (!threadId) return;
    const thread = await this.thread(threadId);
    if (!thread) return;
    await thread.send(notice).catch(() => {});
    await thread.setArchived(true).catch(() => {});
    this.threadSessions.delete(threadId);
  }

  private async onExpired(s: Session): Promise<void> {
    if (this.stopped) return;
    await this.closeThread(s.threadId, `This session expired after ${this.engine.options.idleMinutes} minutes without activity. Start a new one with /task start.`);
  }
}
