// A kill between a session's row and its thread (the start's thread creation reached Discord, its answer never
// reached the bot): after the restart the person must be able to start again at once, not be told a session they
// cannot see is running until it expires. Real discord.js client against the fake Discord, real Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

// Three tasks: a person is not given a task they already played.
const tasks = builtinTasks({ kind: 'backend' }).slice(1, 4) as (TaskRecord & BackendTask)[];
const agent = scriptedAgent('scripted', async () => 'What should happen with an empty list?');

describe('Discord bot restart after a start cut off before its thread', () => {
  const h = new BotHarness({ tasks, agent });
  beforeAll(async () => {
    await h.start();
  });
  afterAll(async () => {
    await h.stop();
  });

  it('ends the threadless session at the restart, and the person starts a new one', async () => {
    const carol = h.fake.user('carol');
    // Carol has accepted the consent once (a finished start), then stopped that session.
    const first = await h.startSession(carol, 'backend');
    await h.agentMessage(first.threadId, 1);
    const stop = h.fake.command(carol, 'task', 'stop', {});
    await h.reply(stop, (s) => s.kind === 'original' && /ended/i.test(s.content), 'the /task stop reply');

    // The kill: Discord creates the thread, the bot never hears back.
    const held = h.fake.holdResponse('POST', /^\/channels\/\d+\/threads$/);
    h.fake.command(carol, 'task', 'start', { kind: 'backend' });
    await held;
    const orphan = await h.fake.waitFor(
      async () => (await h.tdb.prisma.session.findFirst({ where: { status: 'active', threadId: null } })) ?? undefined,
      30_000,
      'the session row written before the thread',
    );
    await h.stopBot();

    // Before the fix this start was refused: "You already have a session running".
    await h.startBot();
    const ended = await h.tdb.prisma.session.findUniqueOrThrow({ where: { id: orphan.id } });
    expect([ended.status, ended.endReason]).toEqual(['abandoned', 'start-interrupted']);
    const again = await h.startSession(carol, 'backend');
    expect(again.threadId).not.toBe(first.threadId);
    await h.agentMessage(again.threadId, 1);
    const active = await h.tdb.prisma.session.findMany({ where: { status: 'active' } });
    expect(active.map((s) => s.threadId)).toEqual([again.threadId]);
  });
});
