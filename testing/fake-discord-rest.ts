// The fake Discord's REST routes: every request the bot makes is recorded, and answered as Discord would
// (interaction callbacks and webhooks, threads and their members, messages with enforce_nonce, typing, channels),
// with the faults a test asks for (a 429, a 502, a response that never comes).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { snowflake, type RecordedFile, type RecordedRequest } from './discord-objects.ts';
import { FakeGateway } from './fake-discord-gateway.ts';

export class FakeRest extends FakeGateway {
  rateLimitOnce(method: string, path: RegExp, retryAfterSeconds: number, global = false): void {
    this.rateLimits.push({ method, path, retryAfter: retryAfterSeconds, global });
  }

  /** Makes the next `times` matching requests fail with 502 (Discord having an outage). */
  failRequests(method: string, path: RegExp, times: number): void {
    this.failures.push({ method, path, left: times });
  }

  /**
   * The next matching request is carried out (a message is created, and announced on the gateway) but its
   * response never comes: the moment a crash right after Discord accepted a post leaves behind. Resolves
   * with the request once it has been carried out. Aborting `signal` withdraws a hold not yet met (the promise
   * then never settles).
   */
  holdResponse(
    method: string,
    path: RegExp,
    match: (body: any) => boolean = () => true,
    signal?: AbortSignal,
  ): Promise<RecordedRequest> {
    return new Promise((resolve) => {
      const hold = { method, path, match, resolve };
      this.holds.push(hold);
      signal?.addEventListener('abort', () => {
        const at = this.holds.indexOf(hold);
        if (at >= 0) this.holds.splice(at, 1);
      });
    });
  }

  protected async handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
      const form = await new Request('http://x/', {
        method: 'POST',
        headers: { 'content-type': ctype },
        body: raw,
      }).formData();
      for (const [key, value] of form.entries()) {
        if (key === 'payload_json') body = JSON.parse(String(value));
        else if (typeof value !== 'string')
          files.push({ name: value.name, contentType: value.type, data: Buffer.from(await value.arrayBuffer()) });
      }
    } else if (raw.length) {
      body = JSON.parse(raw.toString('utf8'));
    }
    const rec: RecordedRequest = { method, path, query: url.search, body, files, at: performance.now(), status: 200 };
    this.requests.push(rec);

    const bucket = Buffer.from(method + path.replace(/\d{16,}/g, ':id'))
      .toString('hex')
      .slice(0, 16);
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
      res.end(
        JSON.stringify({ message: 'You are being rate limited.', retry_after: rl.retryAfter, global: rl.global }),
      );
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
        url: `ws://${this.origin}/gateway`,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 1000, reset_after: 0, max_concurrency: 1 },
      });
    }
    if (method === 'GET' && path === '/gateway') return reply(200, { url: `ws://${this.origin}/gateway` });
    if (method === 'GET' && path === '/users/@me') return reply(200, this.bot);
    if ((m = path.match(/^\/users\/@me\/guilds\/(\d+)$/)) && method === 'DELETE') {
      if (!this.guilds.delete(m[1]!)) return reply(404, { message: 'Unknown Guild', code: 10004 });
      this.left.push(m[1]!);
      this.dispatch('GUILD_DELETE', { id: m[1] });
      return reply(204);
    }
    if (method === 'GET' && path === '/applications/@me')
      return reply(200, { id: this.appId, name: 'sweetloop', flags: 0, bot: this.bot });
    if ((m = path.match(/^\/applications\/(\d+)(?:\/guilds\/(\d+))?\/commands$/)) && method === 'PUT') {
      const list = (body as any[]).map((c) => ({
        ...c,
        id: snowflake(),
        application_id: this.appId,
        version: snowflake(),
        ...(m![2] ? { guild_id: m![2] } : {}),
      }));
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
          interaction: {
            id: it.id,
            type: it.type,
            activity_instance_id: null,
            response_message_id: shown.id,
            response_message_loading: body.type === 5,
            response_message_ephemeral: (shown.flags & 64) !== 0,
          },
          resource: { type: body.type, message: this.messageObject(shown) },
        });
      }
      return reply(204);
    }
    if ((m = path.match(/^\/webhooks\/(\d+)\/([^/]+)(?:\/messages\/(@original|\d+))?$/))) {
      const it = [...this.interactions.values()].find((i) => i.token === m![2]);
      if (!it) return reply(404, { message: 'Unknown Webhook', code: 10015 });
      if (method === 'POST' && !m[3])
        return reply(200, this.messageObject(this.record('followup', body ?? {}, files, null, it.id)));
      if (method === 'PATCH')
        return reply(
          200,
          this.messageObject(this.record(m[3] === '@original' ? 'original' : 'edit', body ?? {}, files, null, it.id)),
        );
      if (method === 'GET') {
        const last = this.replies(it)
          .filter((s) => s.kind === 'callback' || s.kind === 'original')
          .at(-1);
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
        return reply(400, {
          message: 'Invalid Form Body',
          code: 50035,
          errors: {
            content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] },
          },
        });
      }
      const nonceKey = body?.enforce_nonce && body.nonce !== undefined ? `${channel.id}:${body.nonce}` : null;
      const first = nonceKey ? this.nonces.get(nonceKey) : undefined;
      if (first) {
        // Discord: with enforce_nonce, a second post with the same nonce returns the first message.
        return reply(
          200,
          this.history.get(channel.id)!.find((x) => x.id === first),
        );
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
        this.dispatch(channel.thread_metadata ? 'THREAD_DELETE' : 'CHANNEL_DELETE', {
          id: channel.id,
          guild_id: channel.guild_id,
          parent_id: channel.parent_id,
          type: channel.type,
        });
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
}
