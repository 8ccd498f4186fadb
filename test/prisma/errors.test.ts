// Database failures surface as one clear sentence, not as an engine dump.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { openDatabase, parsePostgresUrl } from '../../prisma/db.ts';
import { DatabaseError, UniqueViolationError, isConnectionError, toDatabaseError } from '../../prisma/errors.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

describe('database errors', () => {
  it('a unique-constraint violation names the model and the field', async () => {
    await t.prisma.participant.create({ data: { discordUserId: '222222222222222222' } });
    const err = await t.prisma.participant
      .create({ data: { discordUserId: '222222222222222222' } })
      .catch(toDatabaseError);
    expect(err).toBeInstanceOf(UniqueViolationError);
    expect(err).toBeInstanceOf(DatabaseError);
    expect((err as UniqueViolationError).code).toBe('P2002');
    expect((err as UniqueViolationError).model).toBe('Participant');
    expect((err as UniqueViolationError).fields).toEqual(['discordUserId']);
    expect((err as Error).message).toBe('duplicate value: a Participant with the same discordUserId already exists');
  });

  it('a compound unique key lists all of its fields', async () => {
    const p = await t.prisma.participant.create({ data: { discordUserId: '333333333333333333' } });
    const task = await t.prisma.task.create({
      data: { kind: 'backend', source: 'builtin', contentHash: randomUUID(), description: 'd', hiddenReference: 'r' },
    });
    const s = await t.prisma.session.create({ data: { taskId: task.id, participantId: p.id, channel: 'console' } });
    await t.prisma.turn.create({ data: { sessionId: s.id, index: 0, role: 'agent', content: 'hi' } });
    const err = await t.prisma.turn
      .create({ data: { sessionId: s.id, index: 0, role: 'human', content: 'again' } })
      .catch(toDatabaseError);
    expect((err as UniqueViolationError).fields).toEqual(['sessionId', 'index']);
    expect((err as Error).message).toMatch(/a Turn with the same sessionId, index already exists/);
  });

  it('a foreign-key violation says the referenced row is missing', async () => {
    const err = await t.prisma.session
      .create({ data: { taskId: randomUUID(), participantId: randomUUID(), channel: 'console' } })
      .catch(toDatabaseError);
    expect(err).toBeInstanceOf(DatabaseError);
    expect((err as Error).message).toMatch(/^Session refers to a row that does not exist/);
  });

  it('an unreachable server is a connection error that names where it looked', async () => {
    const err = await openDatabase({ databaseUrl: 'postgres://postgres@127.0.0.1:1/nothing', pgliteDir: '' }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DatabaseError);
    expect((err as Error).message).toMatch(
      /cannot reach the database \(postgres:\/\/postgres@127\.0\.0\.1:1\/nothing\): ECONNREFUSED/,
    );
    expect(isConnectionError((err as Error).cause)).toBe(true);
  });

  it('a missing database is named, and a password never appears in messages', async () => {
    const err = await openDatabase({
      databaseUrl: 'postgres://postgres:s3cret@127.0.0.1:5432/sweetloop_no_such_db',
      pgliteDir: '',
    }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/does not exist/);
    expect((err as Error).message).not.toMatch(/s3cret/);
  });

  it('a server that hangs up is reported as a lost connection', async () => {
    const server = createServer((sock) => sock.destroy());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const err = await openDatabase({ databaseUrl: `postgres://postgres@127.0.0.1:${port}/x`, pgliteDir: '' }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(DatabaseError);
      expect(isConnectionError((err as Error).cause)).toBe(true);
      expect((err as Error).message).toMatch(
        new RegExp(`lost the connection to the database \\(postgres://postgres@127\\.0\\.0\\.1:${port}/x\\)`),
      );
    } finally {
      server.close();
    }
  });

  it('keeps working after the server terminates its connections', async () => {
    expect(await t.prisma.participant.count()).toBeGreaterThan(0);
    const dbName = new URL(t.url).pathname.slice(1);
    const admin = await openDatabase({ databaseUrl: 'postgres://postgres@127.0.0.1:5432/postgres', pgliteDir: '' });
    try {
      await admin.prisma.$queryRawUnsafe(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1',
        dbName,
      );
    } finally {
      await admin.close();
    }
    // The pool drops the dead connections and opens new ones: at most the first query fails, as a connection error.
    const first = await t.prisma.participant.count().catch((e: unknown) => e);
    if (typeof first !== 'number') expect(isConnectionError(first), String(first)).toBe(true);
    expect(await t.prisma.participant.count()).toBeGreaterThan(0);
  });

  it('parses URLs into fields, with percent-encoded passwords', () => {
    expect(parsePostgresUrl('postgresql://bob:p%40ss%2Fw@db.example:6543/app?sslmode=require')).toEqual({
      host: 'db.example',
      port: 6543,
      user: 'bob',
      password: 'p@ss/w',
      database: 'app',
      ssl: true,
    });
    expect(() => parsePostgresUrl('postgres://127.0.0.1:5432')).toThrow(/names no database/);
  });
});
