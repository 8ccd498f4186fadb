// End to end: a study filled by people over the fake Discord (real discord.js client, real Postgres). A study of 6
// tasks, k = 3, two arms at 50%, bound to the guild, with its own consent text; nine people start at random
// moments (three in the same instant, three more together later), each playing sessions until the study answers
// that it is full; one abandons a session half-way. When it is full every task has exactly 3 answered sessions
// from 3 different people, the arms are balanced within every task, and the next person is told the study is full.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import { Rng } from '../../../tasks/random.ts';
import type { FakeUser, InteractionRecord, Shown } from '../../../testing/fake-discord.ts';
import { createStudy, type StudyWithArms } from '../../../prisma/study-store.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const TASKS = builtinTasks({ kind: 'backend', split: 'train' }).slice(0, 6);
const CONSENT = 'STUDY CONSENT: we record your messages for the e2e study.';
const agent = scriptedAgent('scripted', (dialogue) =>
  dialogue.filter((m) => m.role === 'assistant').length === 0
    ? 'Which cases matter most to you?'
    : 'Thanks.\nI WANT TO ANSWER:\n```python\ndef f():\n    return 1\n```',
);

describe('a study over the fake Discord', () => {
  const h = new BotHarness({
    tasks: TASKS,
    agent,
    // The answer's score does not matter here: a quick stand-in for the sandbox.
    evaluate: async () => ({
      score: 1,
      success: true,
      testsPassed: 1,
      testsTotal: 1,
      detail: {},
      evaluatorVersion: 'stub',
    }),
  });
  let study: StudyWithArms;

  beforeAll(async () => {
    await h.start();
    const other = await h.tdb.prisma.policyVersion.create({
      data: { name: 'arm-b', algorithm: 'external', checkpointPath: '/nonexistent', checkpointSha256: '1' },
    });
    const taskIds = (await h.tdb.prisma.task.findMany({ select: { id: true } })).map((t) => t.id);
    study = await createStudy(
      h.tdb.prisma,
      'cli',
      {
        name: 'e2e',
        kind: 'backend',
        split: 'train',
        perTask: 3,
        seed: 42,
        taskIds,
        arms: [
          { policyVersionId: h.policy.id, share: 50 },
          { policyVersionId: other.id, share: 50 },
        ],
        consentText: CONSENT,
        payPerSessionCents: 200,
        bonusSuccessCents: null,
        currency: 'EUR',
        maxSessionsPerPerson: null,
        opensAt: null,
        closesAt: null,
        guildIds: [h.fake.guildId],
        channelIds: [],
      },
      { requireConsent: true },
    );
  });
  afterAll(async () => {
    await h.stop();
  });

  /** /task start, accepting the study's consent when asked: the session's thread, or the refusal shown. */
  async function start(user: FakeUser): Promise<{ threadId: string } | { refusal: string }> {
    const cmd = h.fake.command(user, 'task', 'start', { kind: 'backend' });
    let source: InteractionRecord = cmd;
    let shown = await h.reply(cmd, (s) => s.kind === 'original', 'the /task start reply');
    if (shown.content.includes(CONSENT)) {
      expect(shown.content).toContain('Study e2e: consent (version 1)');
      source = h.fake.click(user, shown, `consent:accept:backend:${study.id}:1`);
      shown = await h.reply(
        source,
        (s: Shown) => (s.kind === 'original' || s.kind === 'followup') && !s.content.startsWith('Thank you! Starting'),
        'the reply after consent',
      );
    }
    const threadId = /<#(\d+)>/.exec(shown.content)?.[1];
    return threadId && shown.content.includes('Only you can see this') ? { threadId } : { refusal: shown.content };
  }

  /** One person: sessions until the study says it is full (a "nothing left for you" answer is asked again later). */
  async function person(name: string, delayMs: number, abandonFirst: boolean): Promise<string> {
    await new Promise((r) => setTimeout(r, delayMs));
    const user = h.fake.user(name);
    let abandon = abandonFirst;
    for (let tries = 0; tries < 200; tries++) {
      const r = await start(user);
      if ('refusal' in r) {
        if (/This study is full/.test(r.refusal)) return r.refusal;
        expect(r.refusal).toMatch(/already had every task of this study that still needs a session/);
        await new Promise((res) => setTimeout(res, 150));
        continue;
      }
      await h.agentMessage(r.threadId, 1);
      if (abandon) {
        abandon = false;
        const stop = h.fake.command(user, 'task', 'stop');
        await h.reply(stop, (s) => s.content.includes('Your session has ended'), 'the /task stop reply');
        continue;
      }
      h.fake.say(user, r.threadId, 'The usual cases, please.');
      await h.fake.waitFor(
        () => h.fake.inChannel(r.threadId).find((s) => s.content.startsWith('**Result:**')),
        30_000,
        'the result',
      );
    }
    throw new Error(`${name} never saw the study full`);
  }

  it('fills every task with exactly k answered sessions from k different people, arms balanced within tasks, then says it is full', async () => {
    const rng = Rng.derive(7, 'study-e2e');
    const later = Math.floor(rng.next() * 1500);
    const delays = [0, 0, 0, later, later, later, ...[0, 1, 2].map(() => Math.floor(rng.next() * 3000))];
    // The one who abandons starts at once: a later one may find every slot taken until the study is full, and
    // then never has a session to abandon (a race the bot's speed decides).
    const endings = await Promise.all(delays.map((d, i) => person(`p${i}`, d, i === 0)));
    expect(endings.every((e) => e.startsWith('This study is full'))).toBe(true);

    const sessions = await h.tdb.prisma.session.findMany({ where: { studyId: study.id } });
    expect(sessions.filter((s) => s.status === 'abandoned')).toHaveLength(1);
    expect(sessions.filter((s) => s.status === 'active')).toHaveLength(0);
    const answered = sessions.filter((s) => s.status === 'answered');
    expect(answered).toHaveLength(18);
    const byTask = new Map<string, typeof answered>();
    for (const s of answered) byTask.set(s.taskId, [...(byTask.get(s.taskId) ?? []), s]);
    expect(byTask.size).toBe(6);
    for (const list of byTask.values()) {
      expect(list).toHaveLength(3);
      expect(new Set(list.map((s) => s.participantId)).size).toBe(3);
      const arms = study.arms.map((a) => list.filter((s) => s.policyVersionId === a.policyVersionId).length).sort();
      expect(arms).toEqual([1, 2]);
    }
    expect(study.arms.map((a) => answered.filter((s) => s.policyVersionId === a.policyVersionId).length)).toEqual([
      9, 9,
    ]);
    // Every person accepted version 1 of the study's consent.
    expect(await h.tdb.prisma.consentAcceptance.count({ where: { studyId: study.id, version: 1 } })).toBe(9);

    // The next person accepts the consent and is told the study is full, rather than sent to other tasks.
    const late = await start(h.fake.user('late'));
    expect(late).toEqual({
      refusal: 'This study is full: every task has all the sessions it needs. Thank you for your interest!',
    });
    expect(await h.tdb.prisma.session.count()).toBe(19);
  });
});
