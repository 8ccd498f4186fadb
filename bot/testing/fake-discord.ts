// A fake Discord (REST + gateway) good enough to run the real discord.js 14 client end to end.
// It plays the parts of Discord the bot uses, records every request the bot makes, and lets a test act as
// people: send slash commands, click buttons, submit modals, post messages in threads. Nothing in it
// knows what the bot does; tests assert on what it recorded.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

const DISCORD_EPOCH = 1420070400000n;
let snowflakeCounter = 0n;
/** A real-looking 18-19 digit snowflake, increasing with time. */
export function snowflake(): string {
  snowflakeCounter = (snowflakeCounter + 1n) & 0xfffn;
  return (((BigInt(Date.now()) - DISCORD_EPOCH) << 22n) | (1n << 17n) | snowflakeCounter).toString();
}

export interface FakeUser {
  id: string;
  username: string;
  global_name: string;
  discriminator: string;
  avatar: null;
  bot: boolean;
}

export interface RecordedFile {
  name: string;
  contentType: string;
  data: Buffer;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: string;
  body: any;
  files: RecordedFile[];
  at: number;
  status: number;
}

/** Something the bot showed: a channel message, an interaction reply, an edit, a follow-up. */
export interface Shown {
  kind: 'channel' | 'callback' | 'original' | 'followup' | 'edit';
  id: string;
  channelId: string | null;
  interactionId: string | null;
  /** Interaction callback type (4 message, 5 deferred, 6 deferred update, 7 update, 9 modal). */
  callbackType?: number;
  content: string;
  embeds: any[];
  components: any[];
  flags: number;
  files: RecordedFile[];
  /** performance.now() when received. */
  at: number;
  /** Date.now() when received, to compare with database timestamps. */
  wallAt: number;
  raw: any;
}

export interface InteractionRecord {
  id: string;
  token: string;
  type: number;
  userId: string;
  sentAt: number;
  ackAt: number | null;
  callbackType: number | null;
  payload: any;
  /** The modal the bot opened in answer (callback type 9). */
  modal?: any;
}

export const PERMISSIONS = {
  // A plain member: view, send, read history, use application commands, send in threads.
  member: (1n << 10n) | (1n << 11n) | (1n << 16n) | (1n << 31n) | (1n << 38n),
  manageGuild: 1n << 5n,
};

interface Conn {
  ws: WebSocket;
  seq: number;
  identified: boolean;
}

export interface FakeDiscordOptions {
  heartbeatIntervalMs?: number;
  /** When set, REST requests without `Authorization: Bot <token>` get 401, as Discord answers a wrong token. */
  token?: string;
}

export class FakeDiscord {
  readonly appId = snowflake();
  readonly guildId = snowflake();
  readonly channelId = snowflake();
  readonly bot: FakeUser = { id: this.appId, username: 'sweetloop', global_name: 'Sweetloop', discriminator: '0', avatar: null, bot: true };
  readonly requests: RecordedRequest[] = [];
  readonly shown: Shown[] = [];
  readonly interactions = new Map<string, InteractionRecord>();
  readonly channels = new Map<string, any>();
  readonly messages = new Map<string, any>();
  readonly threadMembers = new Map<string, Set<string>>();
  /** Commands registered, keyed by "global" or a guild id. */
  readonly commands = new Map<string, any[]>();
  readonly identifies: any[] = [];
  private readonly rateLimits: { method: string; path: RegExp; retryAfter: number; global: boolean }[] = [];
  private readonly failures: { method: string; path: RegExp; left: number }[] = [];
  /** Every message in each channel (people's and the bot's), oldest first, as GET .../messages returns them. */
  readonly history = new Map<string, any[]>();
  /** Nonces of posts sent with enforce_nonce, per channel: a repeat returns the first message. */
  private readonly nonces = new Map<string, string>();
  private readonly holds: { method: string; path: RegExp; match: (body: any) => boolean; resolve: (r: RecordedRequest) => void }[] = [];
  private server: Server | null = null;
  private wss: WebSocketServer | null = null;
  private conns = new Set<Conn>();
  private waiters: { check: () => boolean; resolve: () => void }[] = [];
  /**
   * What was shown, by channel and by interaction: many waiters look these up on every event (bench:bot's 200
   * people), and filtering everything shown each time made the fake, not the bot, the slow part.
   */
  private readonly byChannel = new Map<string, Shown[]>();
  private readonly byInteraction = new Map<string, Shown[]>();
  private readonly heartbeatIntervalMs: number;
  private readonly token: string | null;
  port = 0;

  /** Guilds the bot is in (the first is `guildId`), with their roles beyond @everyone. */
  readonly guilds = new Map<string, { id: string; channelId: string; roles: any[] }>();
  /** Guilds the bot left (DELETE /users/@me/guilds/:id). */
  readonly left: string[] = [];

  constructor(options: FakeDiscordOptions = {}) {
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? 2_000;
    this.token = options.token ?? null;
    this.addGuild(this.guildId, this.channelId);
  }

  /** Adds a guild with one text channel (announced on the gateway when a client is connected). */
  addGuild(guildId = snowflake(), channelId = snowflake()): { guildId: string; channelId: string } {
    this.guilds.set(guildId, { id: guildId, channelId, roles: [] });
    this.channels.set(channelId, {
      id: channelId,
      type: 0,
      guild_id: guildId,
      name: 'sweetloop',
      position: 0,
      permission_overwrites: [],
      nsfw: false,
      parent_id: null,
      last_message_id: null,
      rate_limit_per_user: 0,
      topic: null,
    });
    for (const c of this.conns) if (c.identified) this.send(c, 'GUILD_CREATE', this.guildCreate(guildId));
    return { guildId, channelId };
  }

  /** Creates a role in a guild; returns its id (give it to members with `command(..., { roles })`). */
  role(guildId: string, name: string): string {
    const g = this.guilds.get(guildId)!;
    const role = { id: snowflake(), name, permissions: '0', position: g.roles.length + 1, color: 0, hoist: false, managed: false, mentionable: false, flags: 0 };
    g.roles.push(role);
    this.dispatch('GUILD_ROLE_CREATE', { guild_id: guildId, role });
    return role.id;
  }

  private guildOf(channelId: string): string {
    return this.channels.get(channelId)?.guild_id ?? this.guildId;
  }

  get apiBase(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.handleHttp(req, res).catch((err) => {
        res.statusCode = 500;
        res.end(JSON.stringify({ message: String(err), code: 0 }));
      });
    });
    this.wss = new WebSocketServer({ server: this.server, path: '/gateway' });
    this.wss.on('connection', (ws) => this.onConnection(ws));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    for (const c of this.conns) c.ws.terminate();
    this.conns.clear();
    await new Promise<void>((resolve) => this.wss?.close(() => resolve()) ?? resolve());
    await new Promise<void>((resolve) => {
      if (!this.server) return resolve();
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }

  // ---------------------------------------------------------------- people

  user(name: string): FakeUser {
    return { id: snowflake(), username: name, global_name: name, discriminator: '0', avatar: null, bot: false };
  }

  member(user: FakeUser, moderator = false, roles: string[] = []) {
    const perms = PERMISSIONS.member | (moderator ? PERMISSIONS.manageGuild : 0n);
    return { user, roles, permissions: perms.toString(), joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0, nick: null, avatar: null, pending: false };
  }

  /**
   * Sends a slash command; options are `{ name: value }` for the (sub)command's options. A subcommand in a group
   * is written "group subcommand" (e.g. "experiment start").
   */
  command(
    user: FakeUser,
    name: string,
    subcommand: string | null,
    options: Record<string, string | number | boolean | FakeUser> = {},
    extra: { moderator?: boolean; channelId?: string; guildId?: string; roles?: string[] } = {},
  ): InteractionRecord {
    const channelId = extra.channelId ?? (extra.guildId ? this.guilds.get(extra.guildId)!.channelId : undefined);
    const resolvedUsers: Record<string, FakeUser> = {};
    const resolvedMembers: Record<string, any> = {};
    const opts = Object.entries(options).map(([k, v]) => {
      if (typeof v === 'object') {
        resolvedUsers[v.id] = v;
        const { user: _u, ...m } = this.member(v);
        resolvedMembers[v.id] = m;
        return { type: 6, name: k, value: v.id };
      }
      return { type: typeof v === 'number' ? 4 : typeof v === 'boolean' ? 5 : 3, name: k, value: v };
    });
    const data: any = {
      id: this.registeredId(name),
      name,
      type: 1,
      guild_id: channelId ? this.guildOf(channelId) : this.guildId,
      options: subcommandOptions(subcommand, opts),
    };
    if (Object.keys(resolvedUsers).length) data.resolved = { users: resolvedUsers, members: resolvedMembers };
    return this.interaction(user, 2, data, { moderator: extra.moderator, channelId, roles: extra.roles });
  }

  /** Clicks a button of a message the bot showed. */
  click(user: FakeUser, message: Shown, customId: string, extra: { moderator?: boolean } = {}): InteractionRecord {
    const found = message.components.some((row: any) => row.components?.some((c: any) => c.custom_id === customId));
    if (!found) throw new Error(`the message has no component ${customId}`);
    return this.interaction(user, 3, { custom_id: customId, component_type: 2 }, {
      moderator: extra.moderator,
      // A button on an interaction's reply is clicked where that interaction happened.
      channelId: message.channelId ?? (message.interactionId ? this.interactions.get(message.interactionId)?.payload.channel_id : undefined) ?? this.channelId,
      message: this.messageObject(message),
    });
  }

  /** Submits the modal the bot opened in answer to `opened` (an interaction with callback type 9). */
  submitModal(user: FakeUser, opened: InteractionRecord, values: Record<string, string>): InteractionRecord {
    if (opened.callbackType !== 9) throw new Error('that interaction did not open a modal');
    const customId = opened.modal.custom_id;
    const components = Object.entries(values).map(([k, v]) => ({ type: 18, id: 1, component: { type: 4, id: 2, custom_id: k, value: v } }));
    return this.interaction(user, 5, { custom_id: customId, components }, { channelId: this.channelId });
  }

  /** A person posts in a channel or thread. Passing the same id again redelivers the same event. */
  say(user: FakeUser, channelId: string, content: string, id = snowflake()): string {
    const channel = this.channels.get(channelId);
    const msg = {
      id,
      channel_id: channelId,
      guild_id: this.guildOf(channelId),
      author: user,
      member: (({ user: _u, ...m }) => m)(this.member(user)),
      content,
      ...plainMessageFields(),
      attachments: [],
      embeds: [],
      type: 0,
      flags: 0,
      components: [],
    };
    if (channel) channel.last_message_id = id;
    if (!this.history.get(channelId)?.some((x) => x.id === id)) this.remember(channelId, msg);
    this.dispatch('MESSAGE_CREATE', msg);
    return id;
  }

  private remember(channelId: string, msg: any): void {
    let list = this.history.get(channelId);
    if (!list) this.history.set(channelId, (list = []));
    list.push(msg);
  }

  /** Removes a message the bot posted as if it had never reached Discord (its nonce included). */
  forget(messageId: string): void {
    const at = this.shown.findIndex((s) => s.id === messageId);
    if (at >= 0) {
      const [gone] = this.shown.splice(at, 1);
      for (const list of [this.byChannel.get(gone!.channelId ?? ''), this.byInteraction.get(gone!.interactionId ?? '')]) {
        const i = list?.indexOf(gone!) ?? -1;
        if (i >= 0) list!.splice(i, 1);
      }
    }
    this.messages.delete(messageId);
    for (const list of this.history.values()) {
      const i = list.findIndex((m) => m.id === messageId);
      if (i >= 0) list.splice(i, 1);
    }
    for (const [k, v] of this.nonces) if (v === messageId) this.nonces.delete(k);
  }

  /**
   * The next matching request is carried out (a message is created, and announced on the gateway) but its
   * response never comes: the moment a crash right after Discord accepted a post leaves behind. Resolves
   * with the request once it has been carried out. Aborting `signal` withdraws a hold not yet met (the promise
   * then never settles).
   */
  holdResponse(method: string, path: RegExp, match: (body: any) => boolean = () => true, signal?: AbortSignal): Promise<RecordedRequest> {
    return new Promise((resolve) => {
      const hold = { method, path, match, resolve };
      this.holds.push(hold);
      signal?.addEventListener('abort', () => {
        const at = this.holds.indexOf(hold);
        if (at >= 0) this.holds.splice(at, 1);
      });
    });
  }

  private interaction(user: FakeUser, type: number, data: any, extra: { moderator?: boolean; channelId?: string | undefined; message?: any; roles?: string[] | undefined }): InteractionRecord {
    const id = snowflake();
    const token = 'itk_' + Buffer.from(id + ':' + Math.random()).toString('base64url');
    const channelId = extra.channelId ?? this.channelId;
    const guildId = this.guildOf(channelId);
    const payload: any = {
      id,
      application_id: this.appId,
      type,
      data,
      guild_id: guildId,
      guild: { id: guildId, locale: 'en-US', features: [] },
      channel_id: channelId,
      channel: this.channels.get(channelId),
      member: this.member(user, extra.moderator ?? false, extra.roles ?? []),
      token,
      version: 1,
      app_permissions: ((1n << 53n) - 1n).toString(),
      locale: 'en-US',
      guild_locale: 'en-US',
      entitlements: [],
      authorizing_integration_owners: { '0': guildId },
      context: 0,
      attachment_size_limit: 10485760,
    };
    if (extra.message) payload.message = extra.message;
    const rec: InteractionRecord = { id, token, type, userId: user.id, sentAt: performance.now(), ackAt: null, callbackType: null, payload };
    this.interactions.set(id, rec);
    this.dispatch('INTERACTION_CREATE', payload);
    return rec;
  }

  // ---------------------------------------------------------------- queries for tests

  /** Resolves once `check` returns something truthy (polled; conditions may depend on the database too). */
  async waitFor<T>(check: () => T | undefined | null | false | Promise<T | undefined | null | false>, timeoutMs = 30_000, what = 'condition'): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await check();
      if (v) return v;
      if (Date.now() > deadline) throw new Error(`fake discord: timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, 25);
        const waiter = { check: () => (done(), true), resolve: () => {} };
        this.waiters.push(waiter);
        function done() {
          clearTimeout(timer);
          resolve();
        }
      });
    }
  }

  /** Everything shown in answer to one interaction (its reply, edits of the reply, follow-ups), in order. */
  replies(interaction: InteractionRecord): Shown[] {
    return [...(this.byInteraction.get(interaction.id) ?? [])];
  }

  /** Messages the bot posted in a channel or thread, in order. */
  inChannel(channelId: string): Shown[] {
    return (this.byChannel.get(channelId) ?? []).filter((s) => s.kind === 'channel');
  }

  threads(): any[] {
    return [...this.channels.values()].filter((c) => c.type === 11 || c.type === 12);
  }

  /** Makes the next `method` request whose path matches answer 429 with this retry_after (seconds). */
  rateLimitOnce(method: string, path: RegExp, retryAfterSeconds: number, global = false): void {
    this.rateLimits.push({ method, path, retryAfter: retryAfterSeconds, global });
  }

  /** Makes the next `times` matching requests fail with 502 (Discord having an outage). */
  failRequests(method: string, path: RegExp, times: number): void {
    this.failures.push({ method, path, left: times });
  }

  /** Drops every gateway connection (as Discord does on an outage); clients reconnect by themselves. */
  dropConnections(): void {
    for (const c of this.conns) c.ws.terminate();
    this.conns.clear();
  }

  connectedClients(): number {
    return [...this.conns].filter((c) => c.identified).length;
  }

  // ---------------------------------------------------------------- gateway

  private onConnection(ws: WebSocket): void {
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

  private onIdentify(conn: Conn, d: any): void {
    this.identifies.push(d);
    conn.identified = true;
    const sessionId = snowflake();
    this.send(conn, 'READY', {
      v: 10,
      user: { ...this.bot, verified: true, mfa_enabled: false, flags: 0 },
      guilds: [...this.guilds.keys()].map((id) => ({ id, unavailable: true })),
      session_id: sessionId,
      resume_gateway_url: `ws://127.0.0.1:${this.port}/gateway`,
      shard: [0, 1],
      application: { id: this.appId, flags: 0 },
      private_channels: [],
      relationships: [],
      _trace: ['fake-discord'],
    });
    for (const g of this.guilds.keys()) this.send(conn, 'GUILD_CREATE', this.guildCreate(g));
  }

  private guildCreate(guildId: string): any {
    const channels = [...this.channels.values()].filter((c) => c.guild_id === guildId && c.type !== 11 && c.type !== 12);
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
      roles: [{ id: guildId, name: '@everyone', permissions: PERMISSIONS.member.toString(), position: 0, color: 0, hoist: false, managed: false, mentionable: false, flags: 0 }, ...this.guilds.get(guildId)!.roles],
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

  private send(conn: Conn, t: string, d: any): void {
    conn.seq += 1;
    conn.ws.send(JSON.stringify({ op: 0, t, s: conn.seq, d }));
  }

  /** Sends a gateway event to every identified client. */
  dispatch(t: string, d: any): void {
    for (const c of this.conns) if (c.identified && c.ws.readyState === c.ws.OPEN) this.send(c, t, d);
  }

  // ---------------------------------------------------------------- REST

  private async handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const path = decodeURIComponent(url.pathname).replace(/^\/api(\/v\d+)?/, '');
    const method = req.method ?? 'GET';
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    let body: any = null;
    const files: RecordedFile[] = [];
    const ctype = req.headers['content-type'] ?? '';
    if (ctype.startsWith('multipart/form-data')) {
      const form = await new Request('http://x/', { method: 'POST', headers: { 'content-type': ctype }, body: raw }).formData();
      for (const [key, value] of form.entries()) {
        if (key === 'payload_json') body = JSON.parse(String(value));
        else if (typeof value !== 'string') files.push({ name: value.name, contentType: value.type, data: Buffer.from(await value.arrayBuffer()) });
      }
    } else if (raw.length) {
      body = JSON.parse(raw.toString('utf8'));
    }
    const rec: RecordedRequest = { method, path, query: url.search, body, files, at: performance.now(), status: 200 };
    this.requests.push(rec);

    const bucket = Buffer.from(method + path.replace(/\d{16,}/g, ':id')).toString('hex').slice(0, 16);
    const limit = this.rateLimits.findIndex((r) => r.method === method && r.path.test(path));
    if (limit >= 0) {
      const rl = this.rateLimits.splice(limit, 1)[0]!;
      rec.status = 429;
      res.writeHead(429, {
        'content-type': 'application/json',
        'retry-after': String(Math.ceil(rl.retryAfter)),
        'x-ratelimit-limit': '5',
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(Date.now() / 1000 + rl.retryAfter),
        'x-ratelimit-reset-after': String(rl.retryAfter),
        'x-ratelimit-bucket': bucket,
        'x-ratelimit-scope': rl.global ? 'global' : 'user',
        ...(rl.global ? { 'x-ratelimit-global': 'true' } : {}),
      });
      res.end(JSON.stringify({ message: 'You are being rate limited.', retry_after: rl.retryAfter, global: rl.global }));
      this.wake();
      return;
    }

    const failure = this.failures.find((f) => f.left > 0 && f.method === method && f.path.test(path));
    if (failure) {
      failure.left -= 1;
      rec.status = 502;
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: '502: Bad Gateway', code: 0 }));
      this.wake();
      return;
    }

    if (this.token !== null && req.headers.authorization !== `Bot ${this.token}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: '401: Unauthorized', code: 0 }));
      return;
    }
    const hold = this.holds.findIndex((h) => h.method === method && h.path.test(path) && h.match(body));
    const held = hold >= 0 ? this.holds.splice(hold, 1)[0]! : null;
    const reply = (status: number, json?: unknown) => {
      rec.status = status;
      if (held) {
        // Carried out, never answered (the connection is closed when the fake stops).
        held.resolve(rec);
        this.wake();
        return;
      }
      res.writeHead(status, {
        ...(json === undefined ? {} : { 'content-type': 'application/json' }),
        'x-ratelimit-limit': '50',
        'x-ratelimit-remaining': '49',
        'x-ratelimit-reset': String(Date.now() / 1000 + 1),
        'x-ratelimit-reset-after': '1',
        'x-ratelimit-bucket': bucket,
      });
      res.end(json === undefined ? '' : JSON.stringify(json));
      this.wake();
    };

    let m: RegExpMatchArray | null;
    if (method === 'GET' && path === '/gateway/bot') {
      return reply(200, {
        url: `ws://127.0.0.1:${this.port}/gateway`,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 1000, reset_after: 0, max_concurrency: 1 },
      });
    }
    if (method === 'GET' && path === '/gateway') return reply(200, { url: `ws://127.0.0.1:${this.port}/gateway` });
    if (method === 'GET' && path === '/users/@me') return reply(200, this.bot);
    if ((m = path.match(/^\/users\/@me\/guilds\/(\d+)$/)) && method === 'DELETE') {
      if (!this.guilds.delete(m[1]!)) return reply(404, { message: 'Unknown Guild', code: 10004 });
      this.left.push(m[1]!);
      this.dispatch('GUILD_DELETE', { id: m[1] });
      return reply(204);
    }
    if (method === 'GET' && path === '/applications/@me') return reply(200, { id: this.appId, name: 'sweetloop', flags: 0, bot: this.bot });
    if ((m = path.match(/^\/applications\/(\d+)(?:\/guilds\/(\d+))?\/commands$/)) && method === 'PUT') {
      const list = (body as any[]).map((c) => ({ ...c, id: snowflake(), application_id: this.appId, version: snowflake(), ...(m![2] ? { guild_id: m![2] } : {}) }));
      this.commands.set(m[2] ?? 'global', list);
      return reply(200, list);
    }
    if ((m = path.match(/^\/interactions\/(\d+)\/([^/]+)\/callback$/)) && method === 'POST') {
      const it = this.interactions.get(m[1]!);
      if (!it || it.token !== m[2]) return reply(404, { message: 'Unknown interaction', code: 10062 });
      if (it.ackAt !== null) return reply(400, { message: 'Interaction has already been acknowledged.', code: 40060 });
      it.ackAt = performance.now();
      it.callbackType = body.type;
      if (body.type === 9) it.modal = body.data;
      const shown = this.record('callback', body.data ?? {}, files, null, it.id, body.type);
      const withResponse = url.searchParams.get('with_response') === 'true';
      if (withResponse) {
        return reply(200, {
          interaction: { id: it.id, type: it.type, activity_instance_id: null, response_message_id: shown.id, response_message_loading: body.type === 5, response_message_ephemeral: (shown.flags & 64) !== 0 },
          resource: { type: body.type, message: this.messageObject(shown) },
        });
      }
      return reply(204);
    }
    if ((m = path.match(/^\/webhooks\/(\d+)\/([^/]+)(?:\/messages\/(@original|\d+))?$/))) {
      const it = [...this.interactions.values()].find((i) => i.token === m![2]);
      if (!it) return reply(404, { message: 'Unknown Webhook', code: 10015 });
      if (method === 'POST' && !m[3]) return reply(200, this.messageObject(this.record('followup', body ?? {}, files, null, it.id)));
      if (method === 'PATCH') return reply(200, this.messageObject(this.record(m[3] === '@original' ? 'original' : 'edit', body ?? {}, files, null, it.id)));
      if (method === 'GET') {
        const last = this.replies(it).filter((s) => s.kind === 'callback' || s.kind === 'original').at(-1);
        return last ? reply(200, this.messageObject(last)) : reply(404, { message: 'Unknown Message', code: 10008 });
      }
      if (method === 'DELETE') return reply(204);
    }
    if ((m = path.match(/^\/channels\/(\d+)\/threads$/)) && method === 'POST') {
      const parent = this.channels.get(m[1]!);
      if (!parent) return reply(404, { message: 'Unknown Channel', code: 10003 });
      const thread = {
        id: snowflake(),
        type: body.type ?? 12,
        guild_id: parent.guild_id,
        parent_id: parent.id,
        name: body.name,
        owner_id: this.bot.id,
        last_message_id: null,
        rate_limit_per_user: 0,
        message_count: 0,
        member_count: 1,
        flags: 0,
        thread_metadata: {
          archived: false,
          auto_archive_duration: body.auto_archive_duration ?? 1440,
          archive_timestamp: new Date().toISOString(),
          locked: false,
          invitable: body.invitable ?? true,
          create_timestamp: new Date().toISOString(),
        },
      };
      this.channels.set(thread.id, thread);
      this.threadMembers.set(thread.id, new Set([this.bot.id]));
      this.dispatch('THREAD_CREATE', { ...thread, newly_created: true });
      return reply(201, thread);
    }
    if ((m = path.match(/^\/channels\/(\d+)\/thread-members\/(\d+|@me)$/))) {
      const members = this.threadMembers.get(m[1]!);
      if (!members) return reply(404, { message: 'Unknown Channel', code: 10003 });
      if (method === 'PUT') members.add(m[2]!);
      if (method === 'DELETE') members.delete(m[2]!);
      return reply(204);
    }
    if ((m = path.match(/^\/channels\/(\d+)\/typing$/)) && method === 'POST') return reply(204);
    if ((m = path.match(/^\/channels\/(\d+)\/messages$/)) && method === 'POST') {
      const channel = this.channels.get(m[1]!);
      if (!channel) return reply(404, { message: 'Unknown Channel', code: 10003 });
      if (typeof body?.content === 'string' && body.content.length > 2000) {
        return reply(400, { message: 'Invalid Form Body', code: 50035, errors: { content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] } } });
      }
      const nonceKey = body?.enforce_nonce && body.nonce !== undefined ? `${channel.id}:${body.nonce}` : null;
      const first = nonceKey ? this.nonces.get(nonceKey) : undefined;
      if (first) {
        // Discord: with enforce_nonce, a second post with the same nonce returns the first message.
        return reply(200, this.history.get(channel.id)!.find((x) => x.id === first));
      }
      const shown = this.record('channel', body ?? {}, files, channel.id, null);
      channel.last_message_id = shown.id;
      const msg = this.messageObject(shown);
      if (nonceKey) this.nonces.set(nonceKey, shown.id);
      this.remember(channel.id, msg);
      this.dispatch('MESSAGE_CREATE', msg);
      return reply(200, msg);
    }
    if ((m = path.match(/^\/channels\/(\d+)\/messages$/)) && method === 'GET') {
      const channel = this.channels.get(m[1]!);
      if (!channel) return reply(404, { message: 'Unknown Channel', code: 10003 });
      // Discord's paging: `after` gives the oldest `limit` messages after it, otherwise the newest `limit`
      // (before `before`); newest first either way.
      const limit = Math.min(100, Number(url.searchParams.get('limit') ?? 50));
      const after = url.searchParams.get('after');
      const before = url.searchParams.get('before');
      let list = [...(this.history.get(channel.id) ?? [])].sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
      if (after) list = list.filter((x) => BigInt(x.id) > BigInt(after)).slice(0, limit);
      else list = list.filter((x) => !before || BigInt(x.id) < BigInt(before)).slice(-limit);
      return reply(200, list.reverse());
    }
    if ((m = path.match(/^\/channels\/(\d+)\/messages\/(\d+)$/)) && method === 'PATCH') {
      const prev = this.shown.find((s) => s.id === m![2]);
      if (!prev) return reply(404, { message: 'Unknown Message', code: 10008 });
      const shown = this.record('edit', body ?? {}, files, prev.channelId, null);
      return reply(200, { ...this.messageObject(shown), id: prev.id });
    }
    if ((m = path.match(/^\/channels\/(\d+)$/))) {
      const channel = this.channels.get(m[1]!);
      if (!channel) return reply(404, { message: 'Unknown Channel', code: 10003 });
      if (method === 'GET') return reply(200, channel);
      if (method === 'DELETE') {
        // A deleted channel takes its messages with it.
        this.channels.delete(channel.id);
        this.history.delete(channel.id);
        this.threadMembers.delete(channel.id);
        this.dispatch(channel.thread_metadata ? 'THREAD_DELETE' : 'CHANNEL_DELETE', { id: channel.id, guild_id: channel.guild_id, parent_id: channel.parent_id, type: channel.type });
        return reply(200, channel);
      }
      if (method === 'PATCH') {
        if (body.name) channel.name = body.name;
        if (channel.thread_metadata) {
          if (body.archived !== undefined) channel.thread_metadata.archived = body.archived;
          if (body.locked !== undefined) channel.thread_metadata.locked = body.locked;
        }
        this.dispatch(channel.thread_metadata ? 'THREAD_UPDATE' : 'CHANNEL_UPDATE', channel);
        return reply(200, channel);
      }
    }
    return reply(404, { message: `fake discord: no route for ${method} ${path}`, code: 0 });
  }

  private record(kind: Shown['kind'], data: any, files: RecordedFile[], channelId: string | null, interactionId: string | null, callbackType?: number): Shown {
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

  private messageObject(s: Shown): any {
    const channelId = s.channelId ?? this.channelId;
    return {
      id: s.id,
      channel_id: channelId,
      guild_id: this.guildOf(channelId),
      author: this.bot,
      content: s.content,
      embeds: s.embeds,
      components: s.components,
      attachments: s.files.map((f) => ({ id: snowflake(), filename: f.name, size: f.data.length, url: `http://127.0.0.1:${this.port}/attachments/${f.name}`, proxy_url: `http://127.0.0.1:${this.port}/attachments/${f.name}`, content_type: f.contentType })),
      ...plainMessageFields(),
      ...(s.raw?.nonce !== undefined ? { nonce: s.raw.nonce } : {}),
      type: s.interactionId ? 20 : 0,
      flags: s.flags,
      ...(s.interactionId ? { application_id: this.appId, webhook_id: this.appId } : {}),
    };
  }

  private registeredId(name: string): string {
    for (const list of this.commands.values()) {
      const found = list.find((c) => c.name === name);
      if (found) return found.id;
    }
    return snowflake();
  }

  private wake(): void {
    this.waiters = this.waiters.filter((w) => !w.check());
  }
}

/** The options of a command invocation: the subcommand (inside its group, when "group subcommand") holds them. */
function subcommandOptions(subcommand: string | null, opts: unknown[]): unknown[] {
  if (!subcommand) return opts;
  const [first, second] = subcommand.split(' ');
  if (second) return [{ type: 2, name: first, options: [{ type: 1, name: second, options: opts }] }];
  return [{ type: 1, name: subcommand, options: opts }];
}

/** The fields every message object carries that the fake never varies (no edits, mentions, pins or TTS). */
function plainMessageFields() {
  return { timestamp: new Date().toISOString(), edited_timestamp: null, tts: false, mention_everyone: false, mentions: [], mention_roles: [], pinned: false };
}
