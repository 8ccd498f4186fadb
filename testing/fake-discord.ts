// A fake Discord (REST + gateway) good enough to run the real discord.js 14 client end to end.
// It plays the parts of Discord the bot uses, records every request the bot makes, and lets a test act as
// people: send slash commands, click buttons, submit modals, post messages in threads. Nothing in it
// knows what the bot does; tests assert on what it recorded. Its state and gateway are fake-discord-gateway.ts,
// its REST routes fake-discord-rest.ts, the objects it records discord-objects.ts.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import {
  PERMISSIONS,
  plainMessageFields,
  snowflake,
  subcommandOptions,
  type FakeUser,
  type InteractionRecord,
  type Shown,
} from './discord-objects.ts';
import type { FakeDiscordOptions } from './fake-discord-gateway.ts';
import { FakeRest } from './fake-discord-rest.ts';

export type { FakeUser, InteractionRecord, Shown } from './discord-objects.ts';

export class FakeDiscord extends FakeRest {
  constructor(options: FakeDiscordOptions = {}) {
    super(options);
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
    const role = {
      id: snowflake(),
      name,
      permissions: '0',
      position: g.roles.length + 1,
      color: 0,
      hoist: false,
      managed: false,
      mentionable: false,
      flags: 0,
    };
    g.roles.push(role);
    this.dispatch('GUILD_ROLE_CREATE', { guild_id: guildId, role });
    return role.id;
  }

  get apiBase(): string {
    return `http://${this.origin}/api`;
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
    await new Promise<void>((resolve) => this.server!.listen(this.listenOn.port, this.listenOn.host, resolve));
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
    return {
      user,
      roles,
      permissions: perms.toString(),
      joined_at: new Date().toISOString(),
      deaf: false,
      mute: false,
      flags: 0,
      nick: null,
      avatar: null,
      pending: false,
    };
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
    return this.interaction(
      user,
      3,
      { custom_id: customId, component_type: 2 },
      {
        moderator: extra.moderator,
        // A button on an interaction's reply is clicked where that interaction happened.
        channelId:
          message.channelId ??
          (message.interactionId ? this.interactions.get(message.interactionId)?.payload.channel_id : undefined) ??
          this.channelId,
        message: this.messageObject(message),
      },
    );
  }

  /** Submits the modal the bot opened in answer to `opened` (an interaction with callback type 9). */
  submitModal(user: FakeUser, opened: InteractionRecord, values: Record<string, string>): InteractionRecord {
    if (opened.callbackType !== 9) throw new Error('that interaction did not open a modal');
    const customId = opened.modal.custom_id;
    const components = Object.entries(values).map(([k, v]) => ({
      type: 18,
      id: 1,
      component: { type: 4, id: 2, custom_id: k, value: v },
    }));
    return this.interaction(user, 5, { custom_id: customId, components }, { channelId: this.channelId });
  }

  /** The gateway delivers an interaction again (as after a resume): same id and token, acknowledged or not. */
  redeliver(i: InteractionRecord): void {
    this.dispatch('INTERACTION_CREATE', i.payload);
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

  /** Removes a message the bot posted as if it had never reached Discord (its nonce included). */
  forget(messageId: string): void {
    const at = this.shown.findIndex((s) => s.id === messageId);
    if (at >= 0) {
      const [gone] = this.shown.splice(at, 1);
      for (const list of [
        this.byChannel.get(gone!.channelId ?? ''),
        this.byInteraction.get(gone!.interactionId ?? ''),
      ]) {
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

  private interaction(
    user: FakeUser,
    type: number,
    data: any,
    extra: { moderator?: boolean; channelId?: string | undefined; message?: any; roles?: string[] | undefined },
  ): InteractionRecord {
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
    const rec: InteractionRecord = {
      id,
      token,
      type,
      userId: user.id,
      sentAt: performance.now(),
      ackAt: null,
      callbackType: null,
      payload,
    };
    this.interactions.set(id, rec);
    this.dispatch('INTERACTION_CREATE', payload);
    return rec;
  }

  // ---------------------------------------------------------------- queries for tests

  /** Resolves once `check` returns something truthy (polled; conditions may depend on the database too). */
  async waitFor<T>(
    check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
    timeoutMs = 30_000,
    what = 'condition',
  ): Promise<T> {
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

  /** Messages the bot posted in a channel or thread, in order. */
  inChannel(channelId: string): Shown[] {
    return (this.byChannel.get(channelId) ?? []).filter((s) => s.kind === 'channel');
  }

  /** Drops every gateway connection (as Discord does on an outage); clients reconnect by themselves. */
  dropConnections(): void {
    for (const c of this.conns) c.ws.terminate();
    this.conns.clear();
  }

  connectedClients(): number {
    return [...this.conns].filter((c) => c.identified).length;
  }
}
