// The Discord client's wiring: log in, register the commands, route interactions to their handlers
// (commands/, components.ts) and thread messages to the engine, finish what a previous run left, expire idle
// sessions. Everything a person sees comes from the engine through a thread's SessionView.
import { Client, Events, GatewayIntentBits, Partials, type Interaction, type Message } from 'discord.js';
import type { Session } from '../../prisma/generated/client.ts';
import type { Logger } from '../../prisma/logger.ts';
import { TurnRejectedError, type Hooks, type SessionEngine } from '../engine.ts';
import type { BotServices } from '../services.ts';
import { commandDefinitions, commands } from './commands/index.ts';
import { onButton, onModal } from './components.ts';
import { DB_WAIT_MESSAGE, say, type BotContext, type DiscordBotOptions } from './context.ts';
import { ThreadViews, threadView } from './thread-view.ts';

export type { DiscordBotOptions } from './context.ts';

export class DiscordBot {
  readonly client: Client;
  private readonly ctx: BotContext;
  private stopped = false;
  private pruneTimer: NodeJS.Timeout | null = null;

  constructor(engine: SessionEngine, services: BotServices, options: DiscordBotOptions, log?: Logger) {
    this.client = new Client({
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent],
      // Threads created before a restart may be unknown to the cache when their first message arrives.
      partials: [Partials.Channel],
      rest: { api: options.apiBase },
    });
    this.ctx = { client: this.client, engine, services, options, threads: new ThreadViews(this.client, engine), ...(log ? { log } : {}) };
    this.client.on(Events.InteractionCreate, (i) => void this.onInteraction(i));
    this.client.on(Events.MessageCreate, (m) => void this.onMessage(m));
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
      return threadView(thread);
    });
    engine.startExpiry(options.expiryCheckMs ?? 60_000, (s) => this.onExpired(s));
    this.pruneTimer = setInterval(() => void this.ctx.services.pruneProcessed(7).catch(() => {}), 3600_000);
    this.pruneTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    await this.client.destroy();
  }

  private async onInteraction(i: Interaction): Promise<void> {
    try {
      if (i.isChatInputCommand()) {
        const command = commands.get(i.commandName);
        if (command) await command.execute(this.ctx, i);
        else await say(i, 'Unknown command.');
      } else if (i.isButton()) await onButton(this.ctx, i);
      else if (i.isModalSubmit()) await onModal(this.ctx, i);
    } catch (err) {
      this.ctx.log?.error({ err: (err as Error).message, stack: (err as Error).stack }, 'interaction failed');
      if (i.isRepliable()) await say(i, `Something went wrong: ${(err as Error).message}`).catch(() => {});
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
        await m.reply(DB_WAIT_MESSAGE).catch(() => {});
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
        if (err instanceof TurnRejectedError) return void (await m.reply(err.message).catch(() => {}));
        throw err;
      }
    } catch (err) {
      log?.error({ err: (err as Error).message, message: m.id }, 'thread message failed');
      await m.reply(`Something went wrong: ${(err as Error).message}`).catch(() => {});
    }
  }

  private async onExpired(s: Session): Promise<void> {
    if (this.stopped) return;
    await this.ctx.threads.close(s.threadId, `This session expired after ${this.ctx.engine.options.idleMinutes} minutes without activity. Start a new one with /task start.`);
  }
}
