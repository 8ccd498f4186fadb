// The process that owns the embedded database (`npm start`) serves it to other sweetloop commands over the
// Postgres wire protocol on a Unix socket beside the directory (`<dir>.socket/.s.PGSQL.5432`, in a folder only
// this user may enter: no port, no password, nothing reachable from another user or machine). PGlite is one
// backend session, so the owner and every connection take turns: a connection's messages run while it holds
// PGlite's transaction and query locks (the ones the owner's own queries and transactions take), from its first
// message until Postgres says it is idle again (ReadyForQuery 'I'), so a transaction never interleaves with the
// owner's or another connection's. @electric-sql/pglite-socket holds the lock for a connection's whole life
// (an idle client pool would stop the bot) and not the transaction lock (its queries could land inside one of the
// owner's transactions): hence this small server of our own.
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import type { Logger } from '../tasks/logger.ts';

/** The port number in the socket's name (`.s.PGSQL.<port>`), as pg and libpq expect it. */
export const SERVED_PORT = 5432;
/** A connection that holds the database inside a transaction and says nothing for this long is rolled back and closed. */
const IDLE_IN_TRANSACTION_MS = 30_000;
// sun_path holds 108 bytes with its terminating NUL.
const MAX_SOCKET_PATH = 107;

/** The folder pg is given as `host` to reach the database served from `dir`. */
export function socketDirFor(dir: string): string {
  return `${dir}.socket`;
}

export function socketPathFor(dir: string): string {
  return join(socketDirFor(dir), `.s.PGSQL.${SERVED_PORT}`);
}

// Startup-phase requests without a type byte, answered before any session exists.
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;

/** Takes PGlite's transaction lock, then its query lock (the order its own query() uses); resolves with the release. */
function holdDatabase(db: PGlite): Promise<() => void> {
  return new Promise((acquired, failed) => {
    db._runExclusiveTransaction(() =>
      db.runExclusive(() => new Promise<void>((release) => acquired(() => release()))),
    ).catch(failed);
  });
}

/** The status byte of the last ReadyForQuery ('Z') in a stream of backend messages, or null if it has none. */
export function lastReadyStatus(out: Uint8Array): string | null {
  let status: string | null = null;
  let at = 0;
  while (at + 5 <= out.length) {
    const len = ((out[at + 1]! << 24) | (out[at + 2]! << 16) | (out[at + 3]! << 8) | out[at + 4]!) >>> 0;
    if (out[at] === 0x5a && len === 5 && at + 6 <= out.length) status = String.fromCharCode(out[at + 5]!);
    at += 1 + len;
  }
  return status;
}

const SYNC = Uint8Array.from([0x53, 0, 0, 0, 4]);
function simpleQuery(sql: string): Uint8Array {
  const text = Buffer.from(`${sql}\0`);
  const msg = Buffer.alloc(5 + text.length);
  msg[0] = 0x51;
  msg.writeUInt32BE(4 + text.length, 1);
  text.copy(msg, 5);
  return msg;
}

class Connection {
  private buf = Buffer.alloc(0);
  private started = false;
  private release: (() => void) | null = null;
  private work: Promise<void> = Promise.resolve();
  private idleTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly db: PGlite,
    private readonly socket: Socket,
    private readonly idleMs: number,
    private readonly log?: Logger,
  ) {
    socket.on('data', (chunk) => {
      this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
      this.work = this.work.then(() => this.drain()).catch((err) => this.fail(err));
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      this.work = this.work
        .then(() => this.cleanUp())
        .catch((err) => this.log?.warn({ err: (err as Error).message }, 'embedded database: cleaning up a connection'));
    });
  }

  /** Resolves once what this connection started has finished and the database is released. */
  finished(): Promise<void> {
    return this.work;
  }

  /** The complete messages at the front of the buffer (the startup packet has no type byte). */
  private takeMessages(): Buffer[] {
    const out: Buffer[] = [];
    for (;;) {
      const head = this.started ? 1 : 0;
      if (this.buf.length < head + 4) break;
      const size = head + this.buf.readUInt32BE(head);
      if (this.buf.length < size) break;
      const msg = this.buf.subarray(0, size);
      this.buf = this.buf.subarray(size);
      out.push(msg);
      if (!this.started) {
        const code = msg.length >= 8 ? msg.readUInt32BE(4) : 0;
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          out.pop();
          this.socket.write('N'); // no encryption: a local socket
          continue;
        }
        if (code === CANCEL_REQUEST) {
          out.pop();
          this.socket.destroy();
          break;
        }
        this.started = true;
      }
    }
    return out;
  }

  private async drain(): Promise<void> {
    const messages = this.takeMessages();
    if (!messages.length || this.closed) return;
    const terminate = messages.findIndex((m) => m[0] === 0x58);
    const run = terminate >= 0 ? messages.slice(0, terminate) : messages;
    if (run.length) {
      this.clearIdle();
      this.release ??= await holdDatabase(this.db);
      const out = await this.db.execProtocolRaw(Buffer.concat(run));
      if (out.length && !this.socket.destroyed) this.socket.write(out);
      // Idle only after a complete exchange: the last message ends one (Sync, Query, or the startup packet, whose
      // first byte is its length's high byte, 0) and Postgres says 'I'.
      const ends = [0x53, 0x51, 0].includes(run[run.length - 1]![0]!);
      if (ends && lastReadyStatus(out) === 'I') this.letGo();
      else this.idleTimer = setTimeout(() => this.socket.destroy(), this.idleMs).unref();
    }
    if (terminate >= 0) this.socket.end();
  }

  private letGo(): void {
    this.clearIdle();
    const release = this.release;
    this.release = null;
    release?.();
  }

  private clearIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  /** A connection that goes away in the middle of its work leaves no open transaction behind for the owner. */
  private async cleanUp(): Promise<void> {
    if (!this.release) return;
    try {
      let status = lastReadyStatus(await this.db.execProtocolRaw(SYNC));
      if (status !== 'I') status = lastReadyStatus(await this.db.execProtocolRaw(simpleQuery('ROLLBACK')));
      if (status !== 'I') this.log?.warn({ status }, 'embedded database: a served connection left its session busy');
    } finally {
      this.letGo();
    }
  }

  private fail(err: unknown): void {
    this.log?.warn({ err: (err as Error).message }, 'embedded database: a served connection failed');
    this.socket.destroy();
  }
}

export interface ServedDatabase {
  socketDir: string;
  close(): Promise<void>;
}

/**
 * Serves `db` (opened from `dir`) on its socket until closed; null, with a warning, when it cannot (a path too
 * long for a Unix socket): other commands are then refused with the usual message.
 */
export async function servePglite(
  db: PGlite,
  dir: string,
  o: { log?: Logger | undefined; idleInTransactionMs?: number } = {},
): Promise<ServedDatabase | null> {
  const log = o.log;
  const socketDir = socketDirFor(dir);
  const path = socketPathFor(dir);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
    log?.warn({ path }, 'embedded database: path too long for a Unix socket, not served to other commands');
    return null;
  }
  mkdirSync(socketDir, { recursive: true, mode: 0o700 });
  chmodSync(socketDir, 0o700);
  // This process holds the directory's lock: a socket left here is a dead owner's.
  rmSync(path, { force: true });
  const connections = new Set<Connection>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    const c = new Connection(db, socket, o.idleInTransactionMs ?? IDLE_IN_TRANSACTION_MS, log);
    connections.add(c);
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      void c.finished().then(() => connections.delete(c));
    });
  });
  try {
    await new Promise<void>((ok, fail) => {
      server.once('error', fail);
      server.listen(path, () => ok());
    });
  } catch (err) {
    log?.warn({ err: (err as Error).message, path }, 'embedded database: not served to other commands');
    return null;
  }
  server.on('error', (err) => log?.warn({ err: err.message }, 'embedded database server error'));
  log?.debug({ path }, 'embedded database served to other sweetloop commands');
  return {
    socketDir,
    close: async () => {
      const closed = new Promise<void>((r) => server.close(() => r()));
      for (const s of sockets) s.destroy();
      await Promise.all([...connections].map((c) => c.finished()));
      await closed;
      rmSync(socketDir, { recursive: true, force: true });
    },
  };
}
