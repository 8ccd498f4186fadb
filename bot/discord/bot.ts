// The Discord client's wiring: log in, register the commands, route interactions to their handlers
// (commands/, components.ts) and thread messages to the engine, finish what a previous run left, expire idle
// sessions. Everything a person sees comes from the engine through a thread's SessionView.
import {
  Client,
  Events,
  GatewayIntentBits,
  type Guild,
  MessageFlags,
  Partials,
  REST,
  type Interaction,
  type Message,
  type ThreadChannel,
} from 'discord.js';
import type { Session } from '../../prisma/generated/client.ts';
import type { Logger } from '../../tasks/logger.ts';
import {
  TurnRejectedError,
  type Hooks,
  type PendingWork,
  type ResumedView,
  type SessionEngine,
  type SessionView,
} from '../session/engine.ts';
import type { BotServices } from '../services.ts';
import { commandDefinitions, commands } from './commands/index.ts';
import { onButton, onModal } from './components.ts';
import { DB_WAIT_MESSAGE, internalError, say, type BotContext, type DiscordBotOptions } from './context.ts';
import { guildAllowed } from './permissions.ts';
import { NO_MENTIONS, ThreadViews, threadView } from './thread-view.ts';

export type { DiscordBotOptions } from './context.ts';

export class DiscordBot {
  readonly client: Client;
  /** Where interaction responses go (see exemptInteractionResponses). */
  readonly interactionRest: REST;
  private readonly ctx: BotContext;
  private stopped = false;
  /** SIGTERM: no new turns are taken (messages are caught up on at the next start). */
  private stopping = false;
  private inFlight = 0;
  private pruneTimer: NodeJS.Timeout | null = null;
  /**
   * Settles once start() has taken what people sent while the bot was down: a message arriving before then waits
   * for it, so that it is never taken ahead of (and instead of) one sent earlier.
   */
  private readonly caughtUp: Promise<void>;
  private openLive!: () => void;
  /** Messages the catch-up already answered (asked to be sent again): their gateway events are not handled twice. */
  private readonly answeredByCatchUp = new Set<string>();

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
    this.interactionRest = this.exemptInteractionResponses(options.apiBase);
    this.ctx = {
      client: this.client,
      engine,
      services,
      options,
      threads: new ThreadViews(this.client, engine),
      ...(log ? { log } : {}),
    };
    // The allowlist: nothing from another guild is answered, and the bot leaves guilds it was not meant for.
    this.client.on(
      Events.InteractionCreate,
      (i) => void (guildAllowed(options, i.guildId) ? this.tracked(() => this.onInteraction(i)) : undefined),
    );
    this.caughtUp = new Promise((resolve) => (this.openLive = resolve));
    this.client.on(
      Events.MessageCreate,
      (m) =>
        void (guildAllowed(options, m.guildId) && !this.stopping
          ? this.tracked(() => this.onLiveMessage(m))
          : undefined),
    );
    // Guilds joined while running; those the bot was already in are left at start (start()).
    this.client.on(Events.GuildCreate, (g) => this.leaveIfForeign(g));
    this.client.on(Events.Error, (err) => log?.error({ err: err.message }, 'discord client error'));
    this.client.on(Events.ShardDisconnect, (ev, shard) => log?.warn({ code: ev.code, shard }, 'gateway disconnected'));
  }

  /**
   * Discord does not count interaction responses (the callback, and the interaction's webhook: the reply's edits
   * and follow-ups, all sent with the interaction's token instead of the bot's) against a bot's global limit of
   * 50 requests a second; discord.js's client counts every request against it (@discordjs/rest's
   * globalRequestsPerSecond), so with many people at once, replies to their clicks queued behind the bot's posts
   * (bench:bot, bench/RESULTS.md). They go through a REST manager of their own without that count; the limits Discord
   * states per route, in each response's headers, still apply there.
   */
  private exemptInteractionResponses(apiBase: string): REST {
    const own = new REST({ api: apiBase, globalRequestsPerSecond: Number.POSITIVE_INFINITY });
    const rest = this.client.rest;
    const counted = rest.queueRequest.bind(rest);
    rest.queueRequest = (request) => {
      const appId = this.client.application?.id;
      const interactionResponse =
        request.auth === false &&
        (request.fullRoute.startsWith('/interactions/') ||
          (appId !== undefined && request.fullRoute.startsWith(`/webhooks/${appId}/`)));
      return interactionResponse ? own.queueRequest(request) : counted(request);
    };
    return own;
  }

  private leaveIfForeign(g: Guild): void {
    const { options, log } = this.ctx;
    if (guildAllowed(options, g.id)) return;
    log?.warn({ guild: g.id }, 'leaving a guild not in DISCORD_GUILD_IDS');
    void g.leave().catch((err) => log?.warn({ guild: g.id, err: (err as Error).message }, 'cannot leave guild'));
  }

  /** Logs in, registers the commands, finishes what a previous run left, starts idle expiry. */
  async start(): Promise<void> {
    const { engine, options, log } = this.ctx;
    const ready = new Promise<void>((resolve) => this.client.once(Events.ClientReady, () => resolve()));
    await this.client.login(options.token);
    await ready;
    // discord.js emits GuildCreate only for guilds joined after ready: the ones it was in at login are left here.
    for (const g of this.client.guilds.cache.values()) this.leaveIfForeign(g);
    const defs = commandDefinitions();
    if (options.guildIds.length) {
      for (const g of options.guildIds) await this.client.application!.commands.set(defs, g);
    } else {
      await this.client.application!.commands.set(defs);
    }
    log?.info({ user: this.client.user?.tag, guilds: options.guildIds.length || 'global' }, 'discord bot ready');
    try {
      await this.recover();
    } finally {
      this.openLive();
    }
    engine.startExpiry(options.expiryCheckMs ?? 60_000, (s) => this.onExpired(s));
    engine.startSweep(options.sweepMs ?? 15_000, this.advanceOverdue);
    this.pruneTimer = setInterval(() => void this.ctx.services.pruneProcessed(7).catch(() => {}), 3600_000);
    this.pruneTimer.unref();
  }

  /**
   * Finishes what the previous run left, in an order that loses nothing: agent messages stored but never shown
   * are shown first (until then nobody's later messages can be told apart), then the messages people sent while
   * the bot was down are taken. Neither waits for an agent: every answer the agents owe is written in the
   * background, all sessions at once, since the first one may wait minutes for the local server to load.
   */
  private async recover(): Promise<void> {
    const { engine, log } = this.ctx;
    // No start of this run has begun yet, so a session without a thread is one a kill cut off; it would hold
    // its person's slot until it expired.
    await engine.endThreadless(new Date());
    const work = await engine.pendingWork();
    const showFirst = (w: PendingWork) => w.kind === 'show' && w.session.status === 'active';
    log?.debug(
      { show: work.filter(showFirst).length, background: work.filter((w) => !showFirst(w)).length },
      'recovery: resuming what the last run left',
    );
    this.background(() =>
      engine.resume(
        this.resumedView,
        work.filter((w) => !showFirst(w)),
      ),
    );
    await engine.resume(this.resumedView, work.filter(showFirst));
    await this.catchUp();
  }

  /** Advances, now, what is overdue (the sweep's timer does this every `sweepMs`); returns how many sessions. */
  async sweep(): Promise<number> {
    return (await this.ctx.engine.sweep(this.advanceOverdue)).length;
  }

  /** What nobody works on any more (a post that failed, a step that died) is advanced as after a restart. */
  private readonly advanceOverdue = (work: PendingWork[]): void => {
    if (!this.stopping && !this.stopped) this.background(() => this.ctx.engine.resume(this.resumedView, work));
  };

  /** A session's thread, for work no message was handed over for (a restart, the sweep); null when it is gone. */
  private readonly resumedView = async (s: Session): Promise<ResumedView | null> => {
    const { threads } = this.ctx;
    const thread = s.threadId ? await threads.thread(s.threadId) : null;
    if (!thread) return null;
    return { view: threadView(thread, { recovering: true }), hooks: this.hooksFor(thread) };
  };

  /** Runs work nobody waits for, counted as in flight (a graceful stop waits for it). */
  private background(fn: () => Promise<unknown>): void {
    void this.tracked(async () => {
      await fn().catch((err) => this.ctx.log?.error({ err: (err as Error).message }, 'background work failed'));
    });
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
    if (!drained)
      this.ctx.log?.warn(
        { inFlight: this.inFlight },
        'stopping with turns still in flight (they are resumed at the next start)',
      );
    const left = Math.max(0, deadline - Date.now());
    await Promise.race([this.stop().catch(() => {}), new Promise((r) => setTimeout(r, left).unref())]);
    return drained;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    this.interactionRest.clearHashSweeper();
    this.interactionRest.clearHandlerSweeper();
    await this.client.destroy();
  }

  private async onInteraction(i: Interaction): Promise<void> {
    if (this.stopping) {
      if (i.isRepliable())
        await i
          .reply({ content: 'The bot is restarting. Please try again in a minute.', flags: MessageFlags.Ephemeral })
          .catch(() => {});
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
   * messages after the agent's last one. The first is taken as the reply (stored now; the agent answers it in
   * the background); any later one was written before the agent answered the first, so the person is asked to
   * send it again if it still applies.
   */
  private async catchUp(): Promise<void> {
    const { engine, threads, log } = this.ctx;
    for (const w of await engine.awaitingReplies()) {
      if (!w.session.threadId) continue;
      const thread = await threads.thread(w.session.threadId);
      if (!thread) continue;
      try {
        const fetched = await thread.messages.fetch({ after: w.after, limit: 100 });
        const missed = [...fetched.values()]
          .filter((m) => m.author.id === w.owner && !m.author.bot)
          .sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
        if (!missed.length) continue;
        log?.info(
          { session: w.session.id, messages: missed.length },
          'catching up on messages sent while the bot was down',
        );
        threads.remember(thread.id, w.session.id, w.owner);
        const first = missed[0]!;
        const hooks = this.hooksFor(first.channel, first);
        await this.answering(first, async () => {
          const s = await this.sessionFor(first, hooks);
          if (!s || (await engine.humanTurn(s.sessionId, first.content, first.id, hooks)).duplicate) {
            log?.debug({ session: w.session.id, message: first.id }, 'catch-up: the missed reply was already taken');
            return;
          }
          log?.debug(
            { session: w.session.id, message: first.id },
            'catch-up: missed reply stored; the agent answers it in the background',
          );
          this.background(() => this.answering(first, () => engine.advance(s.sessionId, s.view, hooks)));
        });
        if (missed.length > 1)
          log?.debug(
            { session: w.session.id, messages: missed.slice(1).map((m) => m.id) },
            'catch-up: later messages asked to be sent again',
          );
        for (const m of missed.slice(1)) {
          this.answeredByCatchUp.add(m.id);
          await m
            .reply({
              content:
                'This message arrived while I was offline, after the one I answered; it was not taken. Please send it again if it still applies.',
              allowedMentions: NO_MENTIONS,
            })
            .catch(() => {});
        }
      } catch (err) {
        log?.warn({ err: (err as Error).message, session: w.session.id }, 'cannot read the thread to catch up');
      }
    }
  }

  /** A message from the gateway: handled once the catch-up is done (see caughtUp), unless it already was. */
  private async onLiveMessage(m: Message): Promise<void> {
    await this.caughtUp;
    if (this.answeredByCatchUp.delete(m.id) || this.stopping) return;
    await this.onMessage(m);
  }

  /** A message in a session thread: the person's reply, handed to the engine, which lets the agent answer. */
  private async onMessage(m: Message): Promise<void> {
    if (m.author.bot || !m.inGuild()) return;
    const hooks = this.hooksFor(m.channel, m);
    await this.answering(m, async () => {
      const s = await this.sessionFor(m, hooks);
      if (s) await this.ctx.engine.receive(s.sessionId, m.content, m.id, s.view, hooks);
    });
  }

  /** The session whose thread a person's message is in, with its view; null when it is not their own session's. */
  private async sessionFor(m: Message<true>, hooks: Hooks): Promise<{ sessionId: string; view: SessionView } | null> {
    const { threads } = this.ctx;
    const s = await threads.sessionOf(m.channelId, hooks);
    if (!s || s.owner !== m.author.id) return null;
    const thread = await threads.thread(m.channelId);
    return thread ? { sessionId: s.sessionId, view: threadView(thread) } : null;
  }

  /** Runs `fn` for a person's message; what it cannot take is answered with the reason, a fault with an error id. */
  private async answering(m: Message, fn: () => Promise<unknown>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      const text = err instanceof TurnRejectedError ? err.message : internalError(this.ctx, err, { message: m.id });
      await m.reply({ content: text, allowedMentions: NO_MENTIONS }).catch(() => {});
    }
  }

  /**
   * What the person is told in `channel` while their step waits for the database or the agent: as a reply to
   * their message `m` when there is one (a live or caught-up message), else in the thread (a restart, the sweep).
   */
  private hooksFor(channel: Message<true>['channel'] | ThreadChannel, m?: Message<true>): Hooks {
    let waitingNotice = false;
    let recovered = false;
    return {
      // Several steps may each wait for the database: the person is told once, and once that it is back.
      onDbWaiting: async () => {
        if (waitingNotice) return;
        waitingNotice = true;
        await (m
          ? m.reply({ content: DB_WAIT_MESSAGE, allowedMentions: NO_MENTIONS })
          : channel.send({ content: DB_WAIT_MESSAGE, allowedMentions: NO_MENTIONS })
        ).catch(() => {});
      },
      onDbRecovered: async () => {
        if (!waitingNotice || recovered) return;
        recovered = true;
        await channel.send('The database is back. Continuing.').catch(() => {});
      },
      onAgentWaiting: async () => {
        await channel
          .send('The agent is unavailable right now. Your session is kept: it will answer as soon as it is back.')
          .catch(() => {});
      },
      onAgentRecovered: async () => {
        await channel.send('The agent is back.').catch(() => {});
      },
    };
  }

  private async onExpired(s: Session): Promise<void> {
    if (this.stopped) return;
    await this.ctx.threads.close(
      s.threadId,
      `This session expired after ${this.ctx.engine.options.idleMinutes} minutes without activity. Start a new one with /task start.`,
    );
  }
}
