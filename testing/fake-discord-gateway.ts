// The fake Discord's state and its gateway: what it holds (guilds, channels, messages, interactions, what the
// bot showed), the websocket the discord.js client connects to (hello, identify, ready, guild creates, events),
// and how what the bot showed is recorded and handed back as Discord's message objects. The REST routes are
// fake-discord-rest.ts; the people and the queries for tests, fake-discord.ts.
import type { Server } from 'node:http';
import type { WebSocket, WebSocketServer } from 'ws';
import {
  PERMISSIONS,
  plainMessageFields,
  snowflake,
  type FakeUser,
  type InteractionRecord,
  type RecordedFile,
  type RecordedRequest,
  type Shown,
} from './discord-objects.ts';

export interface Conn {
  ws: WebSocket;
  seq: number;
  identified: boolean;
}

export interface FakeDiscordOptions {
  heartbeatIntervalMs?: number;
  /** When set, REST requests without `Authorization: Bot <token>` get 401, as Discord answers a wrong token. */
  token?: string;
  /**
   * Where it listens (default 127.0.0.1, a free port) and the host name its URLs give clients (default the
   * address): another container reaches it by its service name (bin/compose-check.sh).
   */
  listen?: { host: string; port: number; publicHost?: string };
}

export class FakeGateway {
  readonly appId = snowflake();
  readonly guildId = snowflake();
  readonly channelId = snowflake();
  readonly bot: FakeUser = {
    id: this.appId,
    username: 'sweetloop',
    global_name: 'Sweetloop',
    discriminator: '0',
    avatar: null,
    bot: true,
  };
  readonly requests: RecordedRequest[] = [];
  readonly shown: Shown[] = [];
  readonly interactions = new Map<string, InteractionRecord>();
  readonly channels = new Map<string, any>();
  readonly messages = new Map<string, any>();
  readonly threadMembers = new Map<string, Set<string>>();
  /** Commands registered, keyed by "global" or a guild id. */
  readonly commands = new Map<string, any[]>();
  readonly identifies: any[] = [];
  protected readonly rateLimits: { method: string; path: RegExp; retryAfter: number; global: boolean }[] = [];
  protected readonly failures: { method: string; path: RegExp; left: number }[] = [];
  /** Every message in each channel (people's and the bot's), oldest first, as GET .../messages returns them. */
  readonly history = new Map<string, any[]>();
  /** Nonces of posts sent with enforce_nonce, per channel: a repeat returns the first message. */
  protected readonly nonces = new Map<string, string>();
  protected readonly holds: {
    method: string;
    path: RegExp;
    match: (body: any) => boolean;
    resolve: (r: RecordedRequest) => void;
  }[] = [];
  protected server: Server | null = null;
  protected wss: WebSocketServer | null = null;
  protected conns = new Set<Conn>();
  protected waiters: { check: () => boolean; resolve: () => void }[] = [];
  /**
   * What was shown, by channel and by interaction: many waiters look these up on every event (bench:bot's 200
   * people), and filtering everything shown each time made the fake, not the bot, the slow part.
   */
  protected readonly byChannel = new Map<string, Shown[]>();
  protected readonly byInteraction = new Map<string, Shown[]>();
  protected readonly heartbeatIntervalMs: number;
  protected readonly token: string | null;
  protected readonly listenOn: { host: string; port: number; publicHost: string };
  port = 0;

  /** Guilds the bot is in (the first is `guildId`), with their roles beyond @everyone. */
  readonly guilds = new Map<string, { id: string; channelId: string; roles: any[] }>();
  /** Guilds the bot left (DELETE /users/@me/guilds/:id). */
  readonly left: string[] = [];

  constructor(options: FakeDiscordOptions = {}) {
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? 2_000;
    this.token = options.token ?? null;
    const host = options.listen?.host ?? '127.0.0.1';
    this.listenOn = { host, port: options.listen?.port ?? 0, publicHost: options.listen?.publicHost ?? host };
  }

  /** `HOST:PORT` as clients reach it. */
  get origin(): string {
    return `${this.listenOn.publicHost}:${this.port}`;
  }

  protected guildOf(channelId: string): string {
    return this.channels.get(channelId)?.guild_id ?? this.guildId;
  }

  /** Everything shown in answer to one interaction (its reply, edits of the reply, follow-ups), in order. */
  replies(interaction: InteractionRecord): Shown[] {
    return [...(this.byInteraction.get(interaction.id) ?? [])];
  }

  threads(): any[] {
    return [...this.channels.values()].filter((c) => c.type === 11 || c.type === 12);
  }

  // ---------------------------------------------------------------- gateway

  protected onConnection(ws: WebSocket): void {
    const conn: Conn = { ws, seq: 0, identified: false };
    this.conns.add(conn);
    ws.on('close', () => this.conns.delete(conn));
    ws.on('message', (raw) => {
      let msg: any;
      try {
        msg = JSON.parse(raw.toString());
      } catch {
        ws.close(4002, 'decode error');
        return;
      }
      if (msg.op === 1) ws.send(JSON.stringify({ op: 11, d: null }));
      else if (msg.op === 2) this.onIdentify(conn, msg.d);
      else if (msg.op === 6) ws.send(JSON.stringify({ op: 9, d: false })); // no resume: identify afresh
    });
    ws.send(JSON.stringify({ op: 10, d: { heartbeat_interval: this.heartbeatIntervalMs, _trace: ['fake-discord'] } }));
  }

  protected onIdentify(conn: Conn, d: any): void {
    this.identifies.push(d);
    conn.identified = true;
    const sessionId = snowflake();
    this.send(conn, 'READY', {
      v: 10,
      user: { ...this.bot, verified: true, mfa_enabled: false, flags: 0 },
      guilds: [...this.guilds.keys()].map((id) => ({ id, unavailable: true })),
      session_id: sessionId,
      resume_gateway_url: `ws://${this.origin}/gateway`,
      shard: [0, 1],
      application: { id: this.appId, flags: 0 },
      private_channels: [],
      relationships: [],
      _trace: ['fake-discord'],
    });
    for (const g of this.guilds.keys()) this.send(conn, 'GUILD_CREATE', this.guildCreate(g));
  }

  protected guildCreate(guildId: string): any {
    const channels = [...this.channels.values()].filter(
      (c) => c.guild_id === guildId && c.type !== 11 && c.type !== 12,
    );
    const threads = this.threads().filter((t) => t.guild_id === guildId && !t.thread_metadata.archived);
    return {
      id: guildId,
      name: `Sweetloop test guild ${guildId.slice(-4)}`,
      icon: null,
      owner_id: snowflake(),
      unavailable: false,
      member_count: 2,
      large: false,
      features: [],
      roles: [
        {
          id: guildId,
          name: '@everyone',
          permissions: PERMISSIONS.member.toString(),
          position: 0,
          color: 0,
          hoist: false,
          managed: false,
          mentionable: false,
          flags: 0,
        },
        ...this.guilds.get(guildId)!.roles,
      ],
      channels,
      threads,
      members: [{ user: this.bot, roles: [], joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0 }],
      voice_states: [],
      presences: [],
      emojis: [],
      stickers: [],
      stage_instances: [],
      guild_scheduled_events: [],
      joined_at: new Date().toISOString(),
      preferred_locale: 'en-US',
      premium_tier: 0,
      system_channel_flags: 0,
      verification_level: 0,
      default_message_notifications: 0,
      explicit_content_filter: 0,
      mfa_level: 0,
      nsfw_level: 0,
    };
  }

  protected send(conn: Conn, t: string, d: any): void {
    conn.seq += 1;
    conn.ws.send(JSON.stringify({ op: 0, t, s: conn.seq, d }));
  }

  /** Sends a gateway event to every identified client. */
  dispatch(t: string, d: any): void {
    for (const c of this.conns) if (c.identified && c.ws.readyState === c.ws.OPEN) this.send(c, t, d);
  }

  protected remember(channelId: string, msg: any): void {
    let list = this.history.get(channelId);
    if (!list) this.history.set(channelId, (list = []));
    list.push(msg);
  }

  protected record(
    kind: Shown['kind'],
    data: any,
    files: RecordedFile[],
    channelId: string | null,
    interactionId: string | null,
    callbackType?: number,
  ): Shown {
    const shown: Shown = {
      kind,
      id: snowflake(),
      channelId,
      interactionId,
      content: data.content ?? '',
      embeds: data.embeds ?? [],
      components: data.components ?? [],
      flags: data.flags ?? 0,
      files,
      at: performance.now(),
      wallAt: Date.now(),
      raw: data,
    };
    if (callbackType !== undefined) shown.callbackType = callbackType;
    this.shown.push(shown);
    const index = (map: Map<string, Shown[]>, key: string | null) => {
      if (key === null) return;
      let list = map.get(key);
      if (!list) map.set(key, (list = []));
      list.push(shown);
    };
    index(this.byChannel, channelId);
    index(this.byInteraction, interactionId);
    this.messages.set(shown.id, shown);
    return shown;
  }

  protected messageObject(s: Shown): any {
    const channelId = s.channelId ?? this.channelId;
    return {
      id: s.id,
      channel_id: channelId,
      guild_id: this.guildOf(channelId),
      author: this.bot,
      content: s.content,
      embeds: s.embeds,
      components: s.components,
      attachments: s.files.map((f) => ({
        id: snowflake(),
        filename: f.name,
        size: f.data.length,
        url: `http://${this.origin}/attachments/${f.name}`,
        proxy_url: `http://${this.origin}/attachments/${f.name}`,
        content_type: f.contentType,
      })),
      ...plainMessageFields(),
      ...(s.raw?.nonce !== undefined ? { nonce: s.raw.nonce } : {}),
      type: s.interactionId ? 20 : 0,
      flags: s.flags,
      ...(s.interactionId ? { application_id: this.appId, webhook_id: this.appId } : {}),
    };
  }

  protected registeredId(name: string): string {
    for (const list of this.commands.values()) {
      const found = list.find((c) => c.name === name);
      if (found) return found.id;
    }
    return snowflake();
  }

  protected wake(): void {
    this.waiters = this.waiters.filter((w) => !w.check());
  }
}
