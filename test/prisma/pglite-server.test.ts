// The embedded database served to other commands (prisma/pglite-server.ts), through real pg clients on its Unix
// socket: a served connection's work never lands inside the owner's transaction nor the owner's inside its, a
// connection that dies mid-transaction leaves nothing open, an idle connection does not stop the owner, and a
// NOTIFY sent through it reaches the owner. Then openDatabase end to end: a second process reaches the owner's
// data through it, and a bot or console is refused with who holds it.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../prisma/db.ts';
import { lastReadyStatus, servePglite, socketDirFor, type ServedDatabase } from '../../prisma/pglite-server.ts';
import { tryTrainerLock } from '../../trainer/service.ts';

const root = mkdtempSync(join(tmpdir(), 'sweetloop-pglite-server-'));
const dir = join(root, 'pglite');
let db: PGlite;
let served: ServedDatabase;
let pool: pg.Pool;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  db = await PGlite.create(dir);
  served = (await servePglite(db, dir, { idleInTransactionMs: 1_500 }))!;
  pool = new pg.Pool({ host: socketDirFor(dir), port: 5432, user: 'postgres', database: 'template1', max: 2 });
  await db.exec('CREATE TABLE t (v int)');
}, 60_000);
afterAll(async () => {
  await pool?.end();
  await served?.close();
  await db?.close();
  rmSync(root, { recursive: true, force: true });
});

describe('the embedded database served on a socket', () => {
  it('is a socket in a folder only this user may enter', () => {
    expect(statSync(socketDirFor(dir)).mode & 0o777).toBe(0o700);
    expect(served.socketDir).toBe(socketDirFor(dir));
  });

  it("waits for the owner's transaction to end before running a served query", async () => {
    const order: string[] = [];
    const owner = db.transaction(async (tx) => {
      await tx.query('INSERT INTO t VALUES (1)');
      await sleep(300); // the served query arrives here: it must not join this transaction
      await tx.query('INSERT INTO t VALUES (2)');
      order.push('owner');
      await tx.rollback();
    });
    await sleep(50);
    const remote = pool.query('INSERT INTO t VALUES (3)').then(() => order.push('served'));
    await Promise.all([owner, remote]);
    expect(order).toEqual(['owner', 'served']);
    expect((await db.query<{ v: number }>('SELECT v FROM t ORDER BY v')).rows).toEqual([{ v: 3 }]);
  });

  it('holds the owner back while a served transaction is open, and lets it go at the end', async () => {
    const order: string[] = [];
    const c = await pool.connect();
    await c.query('BEGIN');
    await c.query('INSERT INTO t VALUES (4)');
    const owner = db
      .query<{ n: number }>('SELECT count(*)::int AS n FROM t')
      .then((r) => order.push(`owner ${r.rows[0]!.n}`));
    await sleep(200);
    order.push('rollback');
    await c.query('ROLLBACK');
    c.release();
    await owner;
    expect(order).toEqual(['rollback', 'owner 1']);
  });

  it('rolls back what a connection left open when it died, and an idle connection holds nothing', async () => {
    const c = new pg.Client({ host: socketDirFor(dir), port: 5432, user: 'postgres', database: 'template1' });
    c.on('error', () => {});
    await c.connect();
    await c.query('BEGIN');
    await c.query('INSERT INTO t VALUES (5)');
    (c as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    expect((await db.query<{ v: number }>('SELECT v FROM t ORDER BY v')).rows).toEqual([{ v: 3 }]);
    expect(db.isInTransaction()).toBe(false);
    // The pool keeps its connections open and idle: the owner's work goes on.
    const idle = await pool.connect();
    const t0 = Date.now();
    await db.query('SELECT 1');
    expect(Date.now() - t0).toBeLessThan(5_000);
    idle.release();
  });

  it('closes a connection that sits idle inside its transaction, rolling it back, so the owner goes on', async () => {
    const c = new pg.Client({ host: socketDirFor(dir), port: 5432, user: 'postgres', database: 'template1' });
    let lost: Error | undefined;
    c.on('error', (err) => (lost = err));
    await c.connect();
    await c.query('BEGIN');
    await c.query('INSERT INTO t VALUES (6)');
    // The owner waits for the transaction, which never ends: the server closes it after idleInTransactionMs.
    const n = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM t');
    expect(n.rows).toEqual([{ n: 1 }]);
    await new Promise((r) => setTimeout(r, 100));
    expect(lost?.message).toMatch(/terminated|ended|closed/i);
    await c.end().catch(() => {});
  });

  it('answers a failing query with its error and goes on; a NOTIFY sent through it reaches the owner', async () => {
    await expect(pool.query('SELECT nope')).rejects.toThrow('column "nope" does not exist');
    expect((await pool.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 1 }]);
    let got = '';
    const off = await db.listen('served_hint', (p) => (got = p));
    await pool.query(`SELECT pg_notify('served_hint', 'hello')`);
    await db.query('SELECT 1');
    await off();
    expect(got).toBe('hello');
  });

  it('reads the transaction status of the last ReadyForQuery in a reply', () => {
    const rfq = (s: string) => [0x5a, 0, 0, 0, 5, s.charCodeAt(0)];
    expect(lastReadyStatus(Uint8Array.from([...rfq('T'), 0x43, 0, 0, 0, 4, ...rfq('I')]))).toBe('I');
    expect(lastReadyStatus(Uint8Array.from([...rfq('I'), ...rfq('E')]))).toBe('E');
    expect(lastReadyStatus(Uint8Array.from([0x31, 0, 0, 0, 4]))).toBeNull();
  });
});

describe('openDatabase while another process owns the embedded database', () => {
  let owner: ChildProcess | undefined;
  afterAll(() => owner?.kill('SIGKILL'));

  it('reaches its data through that process, and refuses a second bot naming it', async () => {
    const ownerDir = join(root, 'owned');
    const dbModule = resolve('prisma/db.ts');
    // The owner opens the database, writes a row, shares it as `npm start` does, and waits.
    owner = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `import(${JSON.stringify(dbModule)}).then(async (m) => {
          const db = await m.openDatabase({ pgliteDir: ${JSON.stringify(ownerDir)} });
          await db.raw.pglite.exec("CREATE TABLE IF NOT EXISTS note (body text); INSERT INTO note VALUES ('from the owner')");
          await db.share();
          console.log('shared');
          process.on('SIGTERM', () => db.close().then(() => process.exit(0)));
        })`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((ok, fail) => {
      owner!.stdout!.on('data', (d: Buffer) => d.toString().includes('shared') && ok());
      owner!.once('exit', (code) => fail(new Error(`the owner exited (${code})`)));
    });
    const other = await openDatabase({ pgliteDir: ownerDir });
    try {
      expect(other.kind).toBe('pglite');
      expect(other.label.startsWith(`pglite:${ownerDir} (through process ${owner.pid}`)).toBe(true);
      expect(await other.prisma.$queryRawUnsafe('SELECT body FROM note')).toEqual([{ body: 'from the owner' }]);
      // Its one session would let every trainer service take the trainer lock: the service refuses instead.
      await expect(tryTrainerLock(other)).rejects.toThrow(
        'the trainer service cannot run beside the process that holds',
      );
    } finally {
      await other.close();
    }
    const refused = await openDatabase({ pgliteDir: ownerDir, throughOwner: false }).then(
      () => null,
      (e: Error) => e.message,
    );
    expect(refused).toContain(`already open in process ${owner.pid}`);
    expect(refused).toContain('a second bot or console cannot run beside it');
    expect(refused).toContain(`\`kill ${owner.pid}\``);
    owner.kill('SIGTERM');
    await new Promise((r) => owner!.once('exit', r));
    // Closed, it takes its socket and its lock with it.
    expect(existsSync(socketDirFor(ownerDir))).toBe(false);
    expect(existsSync(`${ownerDir}.lock`)).toBe(false);
  }, 90_000);
});
