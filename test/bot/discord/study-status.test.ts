// /mod study status over the fake Discord (real discord.js client, real Postgres): a moderator sees the progress
// of the studies that run in their guild (bound to it, or to one of its channels) and of the unbound ones, in
// the same words as `sweetloop study show` (bot/study-progress.ts formatStudy), after a person played a session;
// another guild's study is not found for them, though an operator sees it; a member without the moderator
// permission is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { FakeUser, InteractionRecord } from '../../../testing/fake-discord.ts';
import { createStudy, findStudy, type NewStudy, type StudyWithArms } from '../../../prisma/study-store.ts';
import { formatStudy, studyProgress } from '../../../bot/study-progress.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const TASKS = builtinTasks({ kind: 'backend', split: 'train' }).slice(0, 4);
const CONSENT = 'STATUS STUDY CONSENT: we record your messages.';
const agent = scriptedAgent('scripted', (dialogue) =>
  dialogue.filter((m) => m.role === 'assistant').length === 0
    ? 'Which cases matter most to you?'
    : 'Thanks.\nI WANT TO ANSWER:\n```python\ndef f():\n    return 1\n```',
);

let guildB = '';
let boss: FakeUser;
const h = new BotHarness({
  tasks: TASKS,
  agent,
  evaluate: async () => ({
    score: 1,
    success: true,
    testsPassed: 1,
    testsTotal: 1,
    detail: {},
    evaluatorVersion: 'stub',
  }),
  botOptions: (fake) => {
    guildB = fake.addGuild().guildId;
    boss ??= fake.user('boss');
    return { guildIds: [fake.guildId, guildB], operatorIds: [boss.id] };
  },
});

describe('/mod study status', () => {
  let here: StudyWithArms;

  beforeAll(async () => {
    await h.start();
    const taskIds = (await h.tdb.prisma.task.findMany({ select: { id: true }, orderBy: { id: 'asc' } })).map(
      (t) => t.id,
    );
    const study = (name: string, ids: string[], where: Pick<NewStudy, 'guildIds' | 'channelIds'>) =>
      createStudy(
        h.tdb.prisma,
        'cli',
        {
          name,
          kind: 'backend',
          split: 'train',
          perTask: 2,
          seed: 1,
          taskIds: ids,
          arms: [{ policyVersionId: h.policy.id, share: 100 }],
          consentText: CONSENT,
          payPerSessionCents: 150,
          bonusSuccessCents: 50,
          currency: 'USD',
          maxSessionsPerPerson: null,
          opensAt: null,
          closesAt: null,
          ...where,
        },
        { requireConsent: true },
      );
    // Bound to a channel of the harness's guild: /task start there joins it.
    here = await study('here', taskIds.slice(0, 2), { guildIds: [], channelIds: [h.fake.channelId] });
    await study('there', taskIds.slice(2, 3), { guildIds: [guildB], channelIds: [] });
    await study('anywhere', taskIds.slice(3, 4), { guildIds: [], channelIds: [] });
  }, 120_000);
  afterAll(async () => {
    await h.stop();
  });

  const answer = (i: InteractionRecord, what: string) =>
    h.reply(i, (s) => s.kind === 'original' || (s.kind === 'callback' && s.content !== ''), what);
  const expected = async (name: string) => {
    const s = (await findStudy(h.tdb.prisma, name))!;
    return `\`\`\`\n${formatStudy(s, await studyProgress(h.tdb.prisma, s))}\n\`\`\``;
  };

  it("shows a moderator their guild's studies and the unbound ones, as `study show` words them, after a session", async () => {
    // One person plays a session of "here" through its consent, to the rating prompt.
    const ann = h.fake.user('ann');
    const start = h.fake.command(ann, 'task', 'start', { kind: 'backend' });
    const consent = await h.reply(
      start,
      (s) => s.kind === 'original' && s.content.includes(CONSENT),
      'the study consent',
    );
    const accept = h.fake.click(ann, consent, `consent:accept:backend:${here.id}:1`);
    const hidden = await h.reply(accept, (s) => s.content.includes('Only you can see this'), 'the hidden information');
    const threadId = /<#(\d+)>/.exec(hidden.content)![1]!;
    await h.agentMessage(threadId, 1);
    h.fake.say(ann, threadId, 'The usual cases, please.');
    await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('How helpful')),
      60_000,
      'the rating prompt',
    );

    const mod = h.fake.user('mod-a');
    const r = await answer(h.fake.command(mod, 'mod', 'study status', {}, { moderator: true }), '/mod study status');
    expect(r.content).toBe(`${await expected('here')}\n${await expected('anywhere')}`);
    expect(r.content).toContain(
      'progress: 0 task(s) complete, 1 partial, 1 untouched; 1 answered, 0 active session(s)',
    );
    expect(r.content).toMatch(/median active time of answered sessions: \d+\.\d min \(pauses over 5 min left out\)/);
    expect(r.content).toContain(
      'projected completion: not enough data yet (3 slot(s) left; fewer than 3 sessions answered)',
    );
    expect(r.content).not.toContain('study there');

    const named = await answer(
      h.fake.command(mod, 'mod', 'study status', { name: 'here' }, { moderator: true }),
      '/mod study status name:here',
    );
    expect(named.content).toBe(await expected('here'));
  }, 180_000);

  it("does not show a moderator another guild's study; an operator sees it; the other guild's moderator sees theirs", async () => {
    const mod = h.fake.user('mod-a2');
    const hidden = await answer(
      h.fake.command(mod, 'mod', 'study status', { name: 'there' }, { moderator: true }),
      'a study elsewhere',
    );
    expect(hidden.content).toBe('No study named "there" that you may see here.');
    const op = await answer(h.fake.command(boss, 'mod', 'study status', { name: 'there' }), 'the operator');
    expect(op.content).toBe(await expected('there'));
    const modB = h.fake.user('mod-b');
    const theirs = await answer(
      h.fake.command(modB, 'mod', 'study status', {}, { moderator: true, guildId: guildB }),
      'guild B',
    );
    expect(theirs.content).toBe(`${await expected('there')}\n${await expected('anywhere')}`);
  }, 60_000);

  it('refuses a member without the moderator permission, before reading anything', async () => {
    const bob = h.fake.user('bob');
    const r = await answer(h.fake.command(bob, 'mod', 'study status', { name: 'here' }), 'the refusal');
    expect(r.kind).toBe('callback');
    expect(r.content).toContain('for moderators');
    expect(r.flags & 64).toBe(64); // only they see it
    expect(r.content).not.toContain('study here');
  }, 60_000);
});
