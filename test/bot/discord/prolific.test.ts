// A study recruited on Prolific, over the fake Discord (real discord.js client, real Postgres): the person is asked
// their Prolific ID once (a malformed one refused with the reason), plays the study's sessions, is shown the
// completion code after the last one only, and `study payouts --format prolific` pays them by that id; erasing the
// person erases the id, after which the bonus file leaves them out and says so.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { FakeUser, InteractionRecord, Shown } from '../../../testing/fake-discord.ts';
import { createStudy, type StudyWithArms } from '../../../prisma/study-store.ts';
import { prolificBonuses, studyPayouts } from '../../../bot/study-payouts.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const TASKS = builtinTasks({ kind: 'backend', split: 'train' }).slice(0, 3);
const CONSENT = 'PROLIFIC STUDY CONSENT: we record your messages.';
const PROLIFIC_ID = '5F3C9A1B2C4D6E7F8A9B0C1D';
const agent = scriptedAgent('scripted', (dialogue) =>
  dialogue.filter((m) => m.role === 'assistant').length === 0
    ? 'Which cases matter most to you?'
    : 'I WANT TO ANSWER:\n```python\ndef f():\n    return 1\n```',
);

describe('a Prolific study over the fake Discord', () => {
  const h = new BotHarness({
    tasks: TASKS,
    agent,
    // The score does not matter here (the study test does the same): a quick stand-in for the sandbox.
    evaluate: async () => ({
      score: 1,
      success: true,
      testsPassed: 1,
      testsTotal: 1,
      detail: {},
      evaluatorVersion: 'stub',
    }),
    privacy: { key: 'test-privacy-key-0123456789', dirs: [], protectedDirs: [], exportSalts: ['salt-0123456789'] },
  });
  let study: StudyWithArms;

  beforeAll(async () => {
    await h.start();
    const taskIds = (await h.tdb.prisma.task.findMany({ select: { id: true } })).map((t) => t.id);
    study = await createStudy(
      h.tdb.prisma,
      'cli',
      {
        name: 'prolific-pilot',
        kind: 'backend',
        split: 'train',
        perTask: 2,
        seed: 4,
        taskIds,
        arms: [{ policyVersionId: h.policy.id, share: 100 }],
        consentText: CONSENT,
        payPerSessionCents: 150,
        bonusSuccessCents: 50,
        currency: 'GBP',
        maxSessionsPerPerson: 2,
        opensAt: null,
        closesAt: null,
        guildIds: [h.fake.guildId],
        channelIds: [],
        participantIdPlatform: 'prolific',
        completionCode: 'C1PRO2LIFIC',
      },
      { requireConsent: true },
    );
  });
  afterAll(async () => {
    await h.stop();
  });

  const hiddenInfo = (s: Shown) =>
    (s.kind === 'original' || s.kind === 'followup') && s.content.includes('Only you can see this');

  /** Plays the session in the thread to its result, which it returns. */
  async function play(user: FakeUser, threadId: string): Promise<Shown> {
    await h.agentMessage(threadId, 1);
    h.fake.say(user, threadId, 'The usual cases.');
    return h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.startsWith('**Result:**')),
      30_000,
      'the result',
    );
  }

  const threadOf = (s: Shown) => /<#(\d+)>/.exec(s.content)![1]!;

  it('asks the Prolific ID once, shows the completion code after the last session, and pays by that id', async () => {
    const pat = h.fake.user('pat');
    const start = h.fake.command(pat, 'task', 'start', { kind: 'backend' });
    const consent = await h.reply(start, (s) => s.kind === 'original', 'the consent');
    expect(consent.content).toContain(CONSENT);
    const accept = h.fake.click(pat, consent, `consent:accept:backend:${study.id}:1`);
    const ask = await h.reply(accept, (s) => s.content.includes('pays through prolific'), 'the Prolific ID request');
    expect(ask.content).toContain(
      'please give your Prolific ID: it is kept only to pay you, never exported, and deleted with your data',
    );
    expect(await h.tdb.prisma.session.count()).toBe(0);

    // A malformed id: refused with what a valid one looks like; nothing stored, no session.
    const open1 = h.fake.click(pat, ask, 'payid:prolific:backend');
    await h.fake.waitFor(() => open1.callbackType === 9 || undefined, 10_000, 'the form');
    expect(open1.modal.custom_id).toBe('payid:prolific:backend');
    const bad = h.fake.submitModal(pat, open1, { id: 'my name is pat' });
    expect((await h.reply(bad, (s) => s.content.includes('not a Prolific ID'), 'the refusal')).content).toMatch(
      /24 letters and digits/,
    );
    expect(await h.tdb.prisma.payAccount.count()).toBe(0);

    const open2 = h.fake.click(pat, ask, 'payid:prolific:backend');
    await h.fake.waitFor(() => open2.callbackType === 9 || undefined, 10_000, 'the form again');
    const good: InteractionRecord = h.fake.submitModal(pat, open2, { id: ` ${PROLIFIC_ID} ` });
    await h.reply(good, (s) => s.content.includes('your Prolific ID is saved'), 'the thanks');
    const first = await h.reply(good, hiddenInfo, 'the first session');
    const r1 = await play(pat, threadOf(first));
    expect(r1.content).not.toContain('completion code');
    const stored = await h.tdb.prisma.payAccount.findFirstOrThrow({ include: { participant: true } });
    expect(stored).toMatchObject({
      platform: 'prolific',
      accountId: PROLIFIC_ID.toLowerCase(),
      participant: { discordUserId: pat.id },
    });
    // Audited without the id itself.
    const audited = await h.tdb.prisma.auditLog.findFirstOrThrow({ where: { action: 'pay-account.set' } });
    expect(JSON.stringify(audited)).not.toContain(PROLIFIC_ID.toLowerCase());

    // The second and last session: not asked again; the result carries the completion code.
    const again = h.fake.command(pat, 'task', 'start', { kind: 'backend' });
    const second = await h.reply(again, hiddenInfo, 'the second session');
    expect(h.fake.replies(again).some((s) => s.content.includes('pays through prolific'))).toBe(false);
    const r2 = await play(pat, threadOf(second));
    expect(r2.content).toContain('**Your completion code for this study: `C1PRO2LIFIC`**');
    // And a third is refused by the study's cap.
    const third = await h.reply(
      h.fake.command(pat, 'task', 'start', { kind: 'backend' }),
      (s) => s.kind === 'original',
      'the refusal',
    );
    expect(third.content).not.toContain('Only you can see this');

    // The bonus file: participant_id,amount, two sessions at 1.50 + 0.50 for success.
    const payouts = await studyPayouts(h.tdb.prisma, study);
    const file = await prolificBonuses(h.tdb.prisma, study, payouts);
    expect(file).toMatchObject({ text: `${PROLIFIC_ID.toLowerCase()},4.00\n`, people: 1, totalCents: 400, left: [] });

    // Erased with the person: the id goes, and the file leaves them out (owed, settled by hand).
    const del = h.fake.command(pat, 'privacy', 'delete');
    await h.reply(del, (s) => s.kind === 'original' && s.content.includes('Deleted'), 'the receipt');
    expect(await h.tdb.prisma.payAccount.count()).toBe(0);
    const after = await prolificBonuses(h.tdb.prisma, study, await studyPayouts(h.tdb.prisma, study));
    expect(after).toMatchObject({ text: '', people: 0, totalCents: 0, left: [{ erased: true, amountCents: 400 }] });
  });
});
