// The LISTEN side of a Postgres database (prisma/db.ts): one dedicated connection, re-opened when it drops.
import pg from 'pg';
import type { Logger } from '../tasks/logger.ts';
import { DatabaseError, describeDatabaseError } from './errors.ts';

/**
 * One dedicated connection carries every LISTEN (a pooled connection would lose them). If it drops, it is
 * re-opened with back-off and every channel re-subscribed; notifications sent while it was down are lost, so
 * listeners must treat a notification as a hint and still poll for their work.
 */
export class PgListener {
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  private closed = false;
  private retryTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly label: string,
    private readonly log?: Logger,
  ) {}

  async listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>> {
    if (this.closed) throw new Error('database is closed');
    let set = this.handlers.get(channel);
    const first = !set;
    if (!set) this.handlers.set(channel, (set = new Set()));
    set.add(onPayload);
    if (first) {
      try {
        const client = await this.connect();
        await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      } catch (err) {
        set.delete(onPayload);
        if (set.size === 0) this.handlers.delete(channel);
        throw err;
      }
    }
    let done = false;
    return async () => {
      if (done) return;
      done = true;
      const s = this.handlers.get(channel);
      if (!s) return;
      s.delete(onPayload);
      if (s.size === 0) {
        this.handlers.delete(channel);
        if (this.client && !this.closed)
          await this.client.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`).catch(() => {});
      }
    };
  }

  private connect(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    if (!this.connecting) {
      this.connecting = (async () => {
        const client = new pg.Client(this.config);
        client.on('notification', (msg) => {
          for (const h of this.handlers.get(msg.channel) ?? []) {
            try {
              h(msg.payload ?? '');
            } catch (err) {
              this.log?.error({ err, channel: msg.channel }, 'notification handler failed');
            }
          }
        });
        client.on('error', (err) => this.lost(client, err));
        client.on('end', () => this.lost(client));
        try {
          await client.connect();
        } catch (err) {
          client.removeAllListeners('end');
          throw new DatabaseError(describeDatabaseError(err, { label: this.label }), { cause: err });
        }
        this.client = client;
        return client;
      })().finally(() => {
        this.connecting = null;
      });
    }
    return this.connecting;
  }

  private lost(client: pg.Client, err?: Error): void {
    if (this.client !== client) return;
    this.client = null;
    if (this.closed) return;
    this.log?.warn({ err: err?.message, db: this.label }, 'LISTEN connection lost; reconnecting');
    this.scheduleReconnect(500);
  }

  private scheduleReconnect(delay: number): void {
    if (this.closed || this.retryTimer) return;
    this.retryTimer = setTimeout(async () => {
      this.retryTimer = null;
      if (this.closed || this.handlers.size === 0) return;
      try {
        const client = await this.connect();
        for (const channel of this.handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
        this.log?.info({ db: this.label }, 'LISTEN connection restored');
      } catch {
        this.scheduleReconnect(Math.min(delay * 2, 30_000));
      }
    }, delay);
    this.retryTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.handlers.clear();
    const client = this.client ?? (this.connecting ? await this.connecting.catch(() => null) : null);
    this.client = null;
    if (client) {
      client.removeAllListeners('end');
      client.on('error', () => {});
      await client.end().catch(() => {});
    }
  }
}
