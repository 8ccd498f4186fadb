// Postgres goes away in the middle of a session (the bot reaches it through a TCP proxy that the test cuts):
// interactions are still acknowledged, the person is told to wait, and once the database is back their message
// is stored and answered — nothing lost.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../prisma/db.ts';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import { TcpProxy } from '../../../testing/tcp-proxy.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const task = builtinTasks({ kind: 'backend' })[2] as TaskRecord & BackendTask;
const agent = scriptedAgent('scripted', (dialogue) =>
  dialogue.some((m) => m.role === 'assistant')
    ? `I WANT TO ANSWER:\n${task.reference}`
    : 'Any special cases I should know about?',
);

describe('Discord bot when Postgres goes away', () => {
  let proxy: TcpProxy;
  const h = new BotHarness({
    tasks: [task],
    agent,
    openDb: async (url) => {
      const u = new URL(url);
      proxy = new TcpProxy(Number(u.port || 5432));
      await proxy.up();
      u.port = String(proxy.port);
      return openDatabase({ databaseUrl: u.toString(), pgliteDir: '/nonexistent' });
    },
  });
  beforeAll(async () => {
    await h.start();
  });
  afterAll(async () => {
    await h.stop();
  });

  it('tells the person to wait, then stores and answers their message once it is back', async () => {
    const alice = h.fake.user('alice');
    const { threadId } = await h.startSession(alice, 'backend');
    await h.agentMessage(threadId, 1);

    await proxy.down();
    const status = h.fake.command(alice, 'task', 'status');
    const wait = await h.reply(
      status,
      (s) => s.content.includes('database is unavailable'),
      'wait notice on a command',
    );
    expect(status.ackAt).not.toBeNull(); // acknowledged although the database is down
    expect(wait.flags & 64).toBe(0); // an edit of the (ephemeral) deferred reply
    const msgId = h.fake.say(alice, threadId, 'Nothing special, thanks.');
    await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('database is unavailable')),
      30_000,
      'wait notice in the thread',
    );
    expect(await h.tdb.prisma.turn.count({ where: { externalMessageId: msgId } })).toBe(0);

    await proxy.up();
    await h.agentMessage(threadId, 2);
    await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('database is back')),
      30_000,
      'back notice',
    );
    await h.reply(status, (s) => s.content.startsWith('Session'), 'the status, once the database is back');
    const turns = await h.tdb.prisma.turn.findMany({ where: { session: { threadId } }, orderBy: { index: 'asc' } });
    expect(turns.map((t) => t.role)).toEqual(['agent', 'human', 'agent']);
    expect(turns[1]!.externalMessageId).toBe(msgId);
    await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('How helpful')),
      60_000,
      'rating',
    );
  });
});
