// A study recruited on Prolific, played at the console (bot/console.ts over the real engine and Postgres): the
// person accepts the study's consent, is asked their Prolific ID once (a malformed one refused with what a valid
// one looks like, asked again), plays the study's two sessions, and sees the completion code after the last one
// only. The Discord side of the same flow is test/bot/discord/prolific.test.ts.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { createRuntime, type Runtime } from '../../bot/runtime.ts';
import { registerVersion } from '../../prisma/policy-store.ts';
import { deployPolicyByName } from '../../prisma/deployment-store.ts';
import { createStudy } from '../../prisma/study-store.ts';
import { importTasks } from '../../prisma/task-store.ts';
import type { AgentReply, ChatMessage } from '../../tasks/agent.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { ConsolePerson } from '../helpers/console-person.ts';

const CONSENT = 'CONSOLE PROLIFIC CONSENT: we record your messages.';
const PROLIFIC_ID = '5F3C9A1B2C4D6E7F8A9B0C1D';
const CODE = 'C0NSOLE-CODE';

let t: TestDatabase;
let runtime: Runtime;
let root: string;

beforeAll(async () => {
  t = await createTestDatabase();
  root = await mkdtemp(join(tmpdir(), 'console-prolific-'));
  await importTasks(t.prisma, generateMiniTasks({ seed: 31, count: 3, split: 'train' }));
  const policy = await registerVersion(t.prisma, {
    name: 'scripted',
    algorithm: 'external',
    kind: 'endpoint',
    checkpointPath: null,
  });
  await deployPolicyByName(t.db, 'test', 'scripted');
  await createStudy(
    t.prisma,
    'cli',
    {
      name: 'prolific-console',
      kind: 'backend',
      split: 'train',
      perTask: 2,
      seed: 3,
      taskIds: (await t.prisma.task.findMany({ select: { id: true } })).map((x) => x.id),
      arms: [{ policyVersionId: policy.id, share: 100 }],
      consentText: CONSENT,
      payPerSessionCents: 100,
      bonusSuccessCents: 0,
      currency: 'GBP',
      maxSessionsPerPerson: 2,
      opensAt: null,
      closesAt: null,
      guildIds: [],
      channelIds: [],
      participantIdPlatform: 'prolific',
      completionCode: CODE,
    },
    { requireConsent: true },
  );
  // One question, then an answer: the score is not what this test is about (a stand-in for the sandbox).
  const agent = {
    name: 'scripted',
    async reply(dialogue: ChatMessage[]): Promise<AgentReply> {
      return {
        text:
          dialogue.filter((m) => m.role === 'assistant').length === 0
            ? 'Which cases matter most to you?'
            : 'I WANT TO ANSWER: def f():\n    return 1',
      };
    },
  };
  runtime = await createRuntime({
    channel: 'console',
    db: t.db,
    maxTurns: 2,
    idleMinutes: 30,
    render: null,
    loadAgent: async () => agent,
    evaluate: async () => ({
      score: 1,
      success: true,
      testsPassed: 1,
      testsTotal: 1,
      detail: {},
      evaluatorVersion: 'stub',
    }),
  });
}, 120_000);

afterAll(async () => {
  await runtime?.close();
  await t?.drop();
  if (root) await rm(root, { recursive: true, force: true });
});

/** Plays one backend session from the kind prompt to the rating's end; returns where its result line ends. */
async function playSession(term: ConsolePerson, from: number): Promise<{ result: string; at: number }> {
  let at = await term.expect('Which kind of task?', from);
  term.type('b');
  at = await term.expect('Which cases matter most to you?', at);
  at = await term.expect('You: ', at);
  term.type('The usual ones.');
  const start = await term.expect('Result: ', at);
  at = await term.expect('How helpful was the agent?', start);
  const result = term.out.slice(start, term.out.lastIndexOf('How helpful was the agent?'));
  term.type('4');
  at = await term.expect('A comment', at);
  term.type('');
  at = await term.expect('Start another session? [y/N]', at);
  return { result, at };
}

describe('a Prolific study at the console', () => {
  it('asks the Prolific ID once, refuses a malformed one, and shows the completion code after the last session', async () => {
    const term = new ConsolePerson({
      engine: runtime.engine,
      name: 'pat',
      root,
      consentText: 'The bot-wide notice (not this study).',
    });
    let at = await term.expect('Do you accept? [y/N]');
    expect(term.out).toContain(CONSENT);
    term.type('y');
    const asking = 'Study prolific-console pays through prolific: your Prolific ID? ';
    at = await term.expect(asking, at);
    expect(await t.prisma.session.count()).toBe(0);

    term.type('my name is pat');
    at = await term.expect(
      'That is not a Prolific ID: it is 24 letters and digits, such as 5f3c9a1b2c4d6e7f8a9b0c1d. Please check it and try again.',
      at,
    );
    at = await term.expect(asking, at);
    expect(await t.prisma.payAccount.count()).toBe(0);
    term.type(` ${PROLIFIC_ID} `);

    const first = await playSession(term, at);
    expect(first.result).toContain('1 of 1 tests passed');
    expect(first.result).not.toContain('completion code');
    const stored = await t.prisma.payAccount.findFirstOrThrow({ include: { participant: true } });
    expect(stored).toMatchObject({
      platform: 'prolific',
      accountId: PROLIFIC_ID.toLowerCase(),
      participant: { discordUserId: 'console:pat' },
    });
    // Audited without the id itself.
    const audited = await t.prisma.auditLog.findFirstOrThrow({ where: { action: 'pay-account.set' } });
    expect(JSON.stringify(audited).toLowerCase()).not.toContain(PROLIFIC_ID.toLowerCase());

    // The second and last session of the study: not asked again; its result carries the code.
    term.type('y');
    const second = await playSession(term, first.at);
    expect(second.result).toContain(`Your completion code for this study: ${CODE}`);
    term.type('n');
    await term.done;
    expect(term.out.split(asking)).toHaveLength(3); // asked twice: the first time and after the refusal
    expect(await t.prisma.session.count({ where: { status: 'answered' } })).toBe(2);

    // Back at the console later: the id is not asked again.
    const later = new ConsolePerson({
      engine: runtime.engine,
      name: 'pat',
      root,
      consentText: 'The bot-wide notice (not this study).',
    });
    await later.expect('Which kind of task?');
    expect(later.out).not.toContain(asking);
    later.type('q');
    await later.done;
  }, 180_000);
});
