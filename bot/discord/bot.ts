// The Discord client's wiring: log in, register the commands, route interactions to their handlers
// (commands/, components.ts) and thread messages to the engine, finish what a previous run left, expire idle
// sessions. Everything a person sees comes from the engine through a thread's SessionView.
import { Client, Events, GatewayIntentBits, MessageFlags, Partials, type Interaction, type Message } from 'discord.js';
import type { Session } from '../../prisma/generated/client.ts';
import type { Logger } from '../../tasks/logger.ts';
import { TurnRejectedError, type Hooks, type SessionEngine } from '../session/engine.ts';
import type { BotServices } from '../services.ts';
import { commandDefinitions, commands } from './commands/index.ts';
import { onButton, onModal } from './components.ts';
import { DB_WAIT_MESSAGE, internalError, say, type BotContext, type DiscordBotOptions } from './context.ts';
import { guildAllowed } from './permissions.ts';
import { NO_MENTIONS, ThreadViews, threadView } from './thread-view.ts';

export type { DiscordBotOptions } from './context.ts';

export class DiscordBot {
  readonly client: Client;
  private readonly ctx: BotContext;
  private stopped = false;
  /** SIGTERM: no new turns are taken (messages are caught up on at the next start). */
  private stopping = false;
  private inFlight = 0;
  private pruneTimer: NodeJS.Timeout | null = null;

  constructor(engine: SessionEngine, services: BotServices, options: DiscordBotOptions, log?: Logger) {
    this.client = new Client({
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent],
      // Threads created before a restart may be unknown to the cache when their first message arrives.
      partials: [Partials.Channel],
      rest: { api: options.apiBase },
      // Nothing the bot posts pings by default: replies quote people and the model (a post that should ping
      // names its users).
      allowedMentions: { parse: [] },
    });
    this.ctx = { client: this.client, engine, services, options, threads: new ThreadViews(this.client, engine), ...(log ? { log } : {}) };
    // The allowlist: nothing from another guild is answered, and the bot leaves guilds it was not meant for.
    this.client.on(Events.InteractionCreate, (i) => void (guildAllowed(options, i.guildId) ? this.tracked(() => this.onInteraction(i)) : undefined));
    this.client.on(Events.MessageCreate, (m) => void (guildAllowed(options, m.guildId) && !this.stopping ? this.tracked(() => this.onMessage(m)) : undefined));
    this.client.on(Events.GuildCreate, (g) => {
      if (guildAllowed(options, g.id)) return;
      log?.warn({ guild: g.id }, 'leaving a guild not in DISCORD_GUILD_IDS');
      void g.leave().catch((err) => log?.warn({ guild: g.id, err: (err as Error).message }, 'cannot leave guild'));
    });
    this.client.on(Events.Error, (err) => log?.error({ err: err.message }, 'discord client error'));
    this.client.on(Events.ShardDisconnect, (ev, shard) => log?.warn({ code: ev.code, shard }, 'gateway disconnected'));
  }

  /** Logs in, registers the commands, finishes what a previous run left, starts idle expiry. */
  async start(): Promise<void> {
    const { engine, options, threads, log } = this.ctx;
    const ready = new Promise<void>((resolve) => this.client.once(Events.ClientReady, () => resolve()));
    await this.client.login(options.token);
    await ready;
    const defs = commandDefinitions();
    if (options.guildIds.length) {
      for (const g of options.guildIds) await this.client.application!.commands.set(defs, g);
    } else {
      await this.client.application!.commands.set(defs);
    }
    log?.info({ user: this.client.user?.tag, guilds: options.guildIds.length || 'global' }, 'discord bot ready');
    await engine.resume(async (s) => {
      const thread = s.threadId ? await threads.thread(s.threadId) : null;
      if (!thread) return null;
      threads.remember(thread.id, s.id);
      return threadView(thread, { recovering: true });
    });
    await this.catchUp();
    engine.startExpiry(options.expiryCheckMs ?? 60_000, (s) => this.onExpired(s));
    this.pruneTimer = setInterval(() => void this.ctx.services.pruneProcessed(7).catch(() => {}), 3600_000);
    this.pruneTimer.unref();
  }

  /** Is the gateway connected (for /health/ready)? */
  isReady(): boolean {
    return this.client.isReady() && !this.stopping;
  }

  private async tracked(fn: () => Promise<void>): Promise<void> {
    this.inFlight++;
    const run = this.ctx.options.metrics ? () => this.ctx.options.metrics!.track(fn) : fn;
    try {
      await run();
    } finally {
      this.inFlight--;
    }
  }

  /**
   * A graceful stop: takes no new turns (a person's message sent now is read from the thread at the next start;
   * a command is told to try again), waits for the turns in flight to be stored and shown, then stops. Resolves
   * within `deadlineMs` whatever is unreachable; true when everything in flight finished.
   */
  async shutdown(deadlineMs: number): Promise<boolean> {
    this.stopping = true;
    const deadline = Date.now() + deadlineMs;
    while (this.inFlight > 0 && Date.now() < deadline - 250) await new Promise((r) => setTimeout(r, 50));
    const drained = this.inFlight === 0;
    if (!drained) this.ctx.log?.warn({ inFlight: this.inFlight }, 'stopping with turns still in flight (they are resumed at the next start)');
    const left = Math.max(0, deadline - Date.now());
    await Promise.race([this.stop().catch(() => {}), new Promise((r) => setTimeout(r, left).unref())]);
    return drained;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    await this.client.destroy();
  }

  private async onInteraction(i: Interaction): Promise<void> {
    if (this.stopping) {
      if (i.isRepliable()) await i.reply({ content: 'The bot is restarting. Please try again in a minute.', flags: MessageFlags.Ephemeral }).catch(() => {});
      return;
    }
    try {
      if (i.isChatInputCommand()) {
        const command = commands.get(i.commandName);
        if (command) await command.execute(this.ctx, i);
        else await say(i, 'Unknown command.');
      } else if (i.isButton()) await onButton(this.ctx, i);
      else if (i.isModalSubmit()) await onModal(this.ctx, i);
    } catch (err) {
      const text = internalError(this.ctx, err, { interaction: i.id });
      if (i.isRepliable()) await say(i, text).catch(() => {});
    }
  }

  /**
   * Replies the people sent while the bot was down: for each session waiting for its person, the thread's
   * messages after the agent's last one. The first is taken as the reply (as if it had just arrived); any later
   * one was written before the agent answered the first, so the person is asked to send it again if it still
   * applies.
   */
  private async catchUp(): Promise<void> {
    const { engine, threads, log } = this.ctx;
    for (const w of await engine.awaitingReplies()) {
      if (!w.session.threadId) continue;
      const thread = await threads.thread(w.session.threadId);
      if (!thread) continue;
      try {
        const fetched = await thread.messages.fetch({ after: w.after, limit: 100 });
        const missed = [...fetched.values()].filter((m) => m.author.id === w.owner && !m.author.bot).sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
        if (!missed.length) continue;
        log?.info({ session: w.session.id, messages: missed.length }, 'catching up on messages sent while the bot was down');
        threads.remember(thread.id, w.session.id);
        await this.onMessage(missed[0]!);
        for (const m of missed.slice(1)) {
          await m
            .reply({ content: 'This message arrived while I was offline, after the one I answered; it was not taken. Please send it again if it still applies.', allowedMentions: NO_MENTIONS })
            .catch(() => {});
        }
      } catch (err) {
        log?.warn({ err: (err as Error).message, session: w.session.id }, 'cannot read the thread to catch up');
      }
    }
  }

  /** A message in a session thread: the person's reply, handed to the engine, which lets the agent answer. */
  private async onMessage(m: Message): Promise<void> {
    if (m.author.bot || !m.inGuild()) return;
    const { engine, threads, log } = this.ctx;
    let waitingNotice = false;
    let recovered = false;
    const hooks: Hooks = {
      // Several steps may each wait for the database: the person is told once, and once that it is back.
      onDbWaiting: async () => {
        if (waitingNotice) return;
        waitingNotice = true;
        await m.reply({ content: DB_WAIT_MESSAGE, allowedMentions: NO_MENTIONS }).catch(() => {});
      },
      onDbRecovered: async () => {
        if (!waitingNotice || recovered) return;
        recovered = true;
        await m.channel.send('The database is back. Continuing.').catch(() => {});
      },
      onAgentWaiting: async () => {
        await m.channel.send('The agent is unavailable right now. Your session is kept: it will answer as soon as it is back.').catch(() => {});
      },
      onAgentRecovered: async () => {
        await m.channel.send('The agent is back.').catch(() => {});
      },
    };
    try {
      const sessionId = await threads.sessionOf(m.channelId, hooks);
      if (!sessionId) return;
      if ((await engine.ownerOf(sessionId, hooks)) !== m.author.id) return;
      const thread = await threads.thread(m.channelId);
      if (!thread) return;
      try {
        await engine.receive(sessionId, m.content, m.id, threadView(thread), hooks);
      } catch (err) {
        if (err instanceof TurnRejectedError) return void (await m.reply({ content: err.message, allowedMentions: NO_MENTIONS }).catch(() => {}));
        throw err;
      }
    } catch (err) {
      const text = internalError(this.ctx, err, { message: m.id });
      await m.reply({ content: text, allowedMentions: NO_MENTIONS }).catch(() => {});
    }
  }

  private async onExpired(s: Session): Promise<void> {
    if (this.stopped) return;
    await this.ctx.threads.close(s.threadId, `This session expired after ${this.ctx.engine.options.idleMinutes} minutes without activity. Start a new one with /task start.`);
  }
}
