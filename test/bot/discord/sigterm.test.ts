// SIGTERM on a real bot process (bot/shutdown.ts, as `sweetloop bot` uses it) over the fake Discord and a real
// Postgres: in the middle of a turn the process finishes the turn, stores and posts it, and exits; when the turn
// in flight never ends, it still exits by its deadline.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { FakeDiscord } from '../../../testing/fake-discord.ts';
import { TcpProxy } from '../../../testing/tcp-proxy.ts';

function startBot(
  t: TestDatabase,
  fake: FakeDiscord,
  env: Record<string, string>,
  dbUrl = t.url,
): { child: ChildProcess; out: string[]; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/bot/discord/fixtures/sigterm-bot.ts'], {
    env: { ...process.env, TEST_DB_URL: dbUrl, API_BASE: fake.apiBase, GUILD_ID: fake.guildId, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: string[] = [];
  child.stdout!.on('data', (d: Buffer) => out.push(...d.toString().split('\n').filter(Boolean)));
  child.stderr!.on('data', (d: Buffer) => out.push(`stderr: ${d.toString()}`));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, out, exited };
}

describe('SIGTERM', () => {
  let t: TestDatabase;
  let fake: FakeDiscord;
  beforeAll(async () => {
    t = await createTestDatabase();
    await importTasks(t.prisma, builtinTasks({ kind: 'backend' }).slice(0, 2));
    await t.prisma.policyVersion.create({
      data: {
        name: 'p',
        algorithm: 'external',
        checkpointPath: '/nonexistent',
        checkpointSha256: '0'.repeat(64),
        status: 'deployed',
        deployedAt: new Date(),
      },
    });
    fake = await new FakeDiscord({ heartbeatIntervalMs: 1_000 }).start();
  });
  afterAll(async () => {
    await fake?.stop();
    await t?.drop();
  });

  /** A session with the agent's first message shown and the person's reply sent; resolves when the agent thinks. */
  async function midTurn(bot: ReturnType<typeof startBot>, name: string): Promise<string> {
    await fake.waitFor(() => bot.out.includes('ready'), 60_000, `the bot process to start (${bot.out.join(' ')})`);
    const user = fake.user(name);
    const start = fake.command(user, 'task', 'start', { kind: 'backend' });
    const consent = await fake.waitFor(() => fake.replies(start).find((s) => s.kind === 'original'), 30_000, 'consent');
    const accept = fake.click(user, consent, 'consent:accept:backend');
    const hidden = await fake.waitFor(
      () => fake.replies(accept).find((s) => s.content.includes('Only you can see this')),
      30_000,
      'hidden',
    );
    const threadId = /<#(\d+)>/.exec(hidden.content)![1]!;
    await fake.waitFor(
      () => fake.inChannel(threadId).find((s) => s.content.includes('First question?')),
      30_000,
      'agent message 1',
    );
    fake.say(user, threadId, 'My reply.');
    await fake.waitFor(() => bot.out.includes('thinking'), 30_000, 'the agent to start its turn');
    return threadId;
  }

  it('finishes the turn in flight, posts it, and exits', async () => {
    const bot = startBot(t, fake, { AGENT_DELAY_MS: '1500', DEADLINE_MS: '20000' });
    const threadId = await midTurn(bot, 'alice');
    const t0 = Date.now();
    bot.child.kill('SIGTERM');
    expect(await bot.exited).toBe(0);
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(bot.out).toContain('exited cleanly');
    const posted = fake.inChannel(threadId).filter((s) => s.content.includes('Second question?'));
    expect(posted).toHaveLength(1);
    const turns = await t.prisma.turn.findMany({ where: { session: { threadId } }, orderBy: { index: 'asc' } });
    expect(turns.map((x) => x.role)).toEqual(['agent', 'human', 'agent']);
    expect(turns[2]!.externalMessageId).toBe(posted[0]!.id);
  });

  it('exits by its deadline when the turn in flight never ends', async () => {
    const bot = startBot(t, fake, { AGENT_DELAY_MS: 'hang', DEADLINE_MS: '3000' });
    await midTurn(bot, 'bob');
    const t0 = Date.now();
    bot.child.kill('SIGTERM');
    expect(await bot.exited).toBe(0);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(2_000);
    expect(took).toBeLessThan(8_000);
  });

  it('exits by its deadline when the database goes away mid-turn, and the turn is written after a restart', async () => {
    const proxy = new TcpProxy(Number(new URL(t.url).port || 5432));
    await proxy.up();
    const bot = startBot(t, fake, { AGENT_DELAY_MS: '1500', DEADLINE_MS: '4000' }, proxy.urlFor(t.url));
    const threadId = await midTurn(bot, 'carol');
    await proxy.down(); // the agent's answer cannot be stored now
    const t0 = Date.now();
    bot.child.kill('SIGTERM');
    await bot.exited;
    expect(Date.now() - t0).toBeLessThan(9_000);
    expect(fake.inChannel(threadId).filter((s) => s.content.includes('Second question?'))).toHaveLength(0);

    // Nothing was lost: the person's reply is stored, and the next process writes and posts the agent's turn once.
    await proxy.up();
    const again = startBot(t, fake, { AGENT_DELAY_MS: '0', DEADLINE_MS: '5000' }, proxy.urlFor(t.url));
    await fake.waitFor(
      () => fake.inChannel(threadId).find((s) => s.content.includes('Second question?')),
      60_000,
      'the turn after the restart',
    );
    const turns = await t.prisma.turn.findMany({ where: { session: { threadId } }, orderBy: { index: 'asc' } });
    expect(turns.map((x) => [x.role, x.content])).toEqual([
      ['agent', 'First question?'],
      ['human', 'My reply.'],
      ['agent', 'Second question?'],
    ]);
    again.child.kill('SIGTERM');
    await again.exited;
    await proxy.down();
  });
});
