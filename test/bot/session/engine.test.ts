// The session engine without Discord: task assignment, the turn limit, refused messages, consent rules.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import { acceptConsent } from '../../../prisma/participant-store.ts';
import { assignTask, neededKind, StudyRefusedError } from '../../../bot/assign.ts';
import { defaultStudy } from '../../../prisma/study-store.ts';
import { RefusedError, TurnRejectedError } from '../../../bot/session/engine.ts';
import { createRuntime, type Runtime } from '../../../bot/runtime.ts';
import { createTestDatabase } from '../../../testing/database.ts';
import { openDatabase } from '../../../prisma/db.ts';
import { deployPolicyByName } from '../../../prisma/deployment-store.ts';
import { scriptedAgent } from '../discord/harness.ts';
import type { SessionView } from '../../../bot/session/types.ts';
import { PASTE_FLAG_REASON, PASTE_NOTICE, refreshQuality } from '../../../prisma/quality-store.ts';
import { pythonCode } from '../../../tasks/python-facts.ts';

type TestDb = Awaited<ReturnType<typeof createTestDatabase>>;
let mode: 'chatty' | 'huge' = 'chatty';
const agent = scriptedAgent('scripted', () => (mode === 'huge' ? 'z'.repeat(9000) : 'Could you tell me more?'));

describe('session engine', () => {
  let t: TestDb;
  let rt: Runtime;
  beforeAll(async () => {
    t = await createTestDatabase();
    await importTasks(
      t.prisma,
      [...builtinTasks({ kind: 'backend' }).slice(0, 3), ...builtinTasks({ kind: 'frontend' }).slice(0, 2)],
      { split: 'train' },
    );
    await t.prisma.policyVersion.create({
      data: {
        name: 'p1',
        algorithm: 'external',
        checkpointPath: '/x',
        checkpointSha256: '0'.repeat(64),
        status: 'deployed',
        deployedAt: new Date(),
      },
    });
    rt = await createRuntime({
      channel: 'console',
      db: t.db,
      maxTurns: 3,
      idleMinutes: 30,
      loadAgent: async () => agent,
      render: null,
      policyPollMs: 60_000,
    });
  });
  afterAll(async () => {
    await rt?.close();
    await t?.drop();
  });

  it('assigns the least-collected task of the default study, never the same task twice to one person, and says when none is left', async () => {
    const a = await acceptConsent(t.prisma, 'console:a', 'a');
    const b = await acceptConsent(t.prisma, 'console:b', 'b');
    const study = await defaultStudy(t.prisma);
    const pickTask = (participantId: string) =>
      assignTask(t.prisma, study, participantId, 'backend', async (_tx, pick) => pick.taskId);
    const backend = await t.prisma.task.findMany({ where: { kind: 'backend' }, orderBy: { externalId: 'asc' } });
    // Two sessions on task 0, one on task 1, none on task 2: b gets task 2.
    for (const [task, who] of [
      [0, a],
      [0, b],
      [1, a],
    ] as const) {
      await t.prisma.session.create({
        data: {
          taskId: backend[task]!.id,
          participantId: who.id,
          channel: 'console',
          status: 'answered',
          studyId: study.id,
        },
      });
    }
    expect(await pickTask(b.id)).toBe(backend[2]!.id);
    // a has had tasks 0 and 1: only task 2 remains for a.
    expect(await pickTask(a.id)).toBe(backend[2]!.id);
    await t.prisma.session.create({
      data: { taskId: backend[2]!.id, participantId: a.id, channel: 'console', status: 'abandoned', studyId: study.id },
    });
    const none = await pickTask(a.id).catch((e) => e);
    expect(none).toBeInstanceOf(StudyRefusedError);
    expect(none).toMatchObject({
      reason: 'no-task',
      message: expect.stringMatching(/no backend task left that you have not done yet/),
    });
    // Three answered backend sessions over three tasks, none for frontend: frontend is needed.
    expect(await neededKind(t.prisma, study.id)).toBe('frontend');
  });

  it('refuses a person without consent, and frontend sessions without a renderer', async () => {
    await expect(rt.engine.start({ externalId: 'console:nobody', displayName: null }, 'backend')).rejects.toMatchObject(
      { reason: 'no-consent' },
    );
    await acceptConsent(t.prisma, 'console:c', 'c');
    const err = await rt.engine.start({ externalId: 'console:c', displayName: 'c' }, 'frontend').catch((e) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect(err.reason).toBe('no-renderer');
  });

  it('ends at the turn limit with the last agent message as the answer; refuses over-long and out-of-turn messages', async () => {
    await acceptConsent(t.prisma, 'console:d', 'd');
    const person = { externalId: 'console:d', displayName: 'd' };
    const s = await rt.engine.start(person, 'backend');
    await expect(rt.engine.humanTurn(s.sessionId, 'too early', null)).rejects.toThrow(/wait for the agent/);
    const step1 = await rt.engine.agentStep(s.sessionId);
    expect(step1!.agentTurn).toBe(1);
    expect(await rt.engine.agentStep(s.sessionId)).toBeNull(); // nothing owed: it is the person's turn
    await expect(rt.engine.humanTurn(s.sessionId, 'x'.repeat(401), null)).rejects.toThrow(
      /401 characters long; the limit is 400/,
    );
    await expect(rt.engine.humanTurn(s.sessionId, '   ', null)).rejects.toBeInstanceOf(TurnRejectedError);
    for (let k = 2; k <= 3; k++) {
      await rt.engine.humanTurn(s.sessionId, `answer ${k}`, null);
      const step = await rt.engine.agentStep(s.sessionId);
      expect(step!.answered).toBe(k === 3);
    }
    const stored = await t.prisma.session.findUniqueOrThrow({ where: { id: s.sessionId }, include: { turns: true } });
    expect(stored.status).toBe('answered');
    expect(stored.endReason).toBe('turn-limit');
    expect(stored.answer).toBe('Could you tell me more?');
    expect(stored.turns).toHaveLength(5);
    const e = await rt.engine.evaluate(s.sessionId);
    expect(e.outcome.score).toBe(0);
    expect(e.outcome.testsTotal).toBeGreaterThan(0);
    // Rated by someone else: refused; by the person: stored and a second rating replaces the first.
    await expect(rt.engine.rate(s.sessionId, { externalId: 'console:a', displayName: null }, 5)).rejects.toThrow(
      /Only the person/,
    );
    await rt.engine.rate(s.sessionId, person, 2);
    await rt.engine.rate(s.sessionId, person, 3);
    expect((await t.prisma.rating.findMany({ where: { sessionId: s.sessionId } })).map((r) => r.value)).toEqual([3]);
  });

  it("tells the person, where they played, that a session whose replies pasted the reference's code is left out", async () => {
    await acceptConsent(t.prisma, 'console:paster', 'paster');
    const s = await rt.engine.start({ externalId: 'console:paster', displayName: 'paster' }, 'backend');
    const task = await t.prisma.task.findUniqueOrThrow({ where: { id: s.taskId } });
    const code = pythonCode(task.hiddenReference).split('\n').slice(1).join('\n').slice(0, 390);
    const notices: string[] = [];
    const view: SessionView = {
      showAgentMessage: async (step) => `m-${step.turnId}`,
      showResult: async () => {},
      askRating: async () => {},
      notice: async (text) => void notices.push(text),
    };
    await rt.engine.advance(s.sessionId, view);
    await rt.engine.receive(s.sessionId, code, null, view);
    expect(await rt.engine.receive(s.sessionId, 'I do not know more.', null, view)).toBe('awaiting-rating');
    expect(notices).toEqual([PASTE_NOTICE]);
    expect(
      await t.prisma.moderationFlag.count({
        where: { sessionId: s.sessionId, reason: PASTE_FLAG_REASON, resolvedAt: null },
      }),
    ).toBe(1);
    // A careful person's session says nothing of the kind.
    await acceptConsent(t.prisma, 'console:careful', 'careful');
    const c = await rt.engine.start({ externalId: 'console:careful', displayName: 'careful' }, 'backend');
    notices.length = 0;
    await rt.engine.advance(c.sessionId, view);
    await rt.engine.receive(c.sessionId, 'It adds the numbers up.', null, view);
    await rt.engine.receive(c.sessionId, 'That is all.', null, view);
    expect(notices).toEqual([]);
    // A second session of the same person: their score counts both.
    const c2 = await rt.engine.start({ externalId: 'console:careful', displayName: 'careful' }, 'backend');
    await rt.engine.advance(c2.sessionId, view);
    await rt.engine.receive(c2.sessionId, 'ok', null, view);
    await rt.engine.receive(c2.sessionId, 'It sorts them.', null, view);
    // The quality the engine wrote from what it held is what a full refresh computes: it finds nothing to change.
    const people = await t.prisma.participant.findMany({
      where: { discordUserId: { in: ['console:paster', 'console:careful'] } },
    });
    const ids = people.map((p) => p.id);
    expect(await t.prisma.participantQuality.count({ where: { participantId: { in: ids } } })).toBe(2);
    const sessionIds = [s.sessionId, c.sessionId, c2.sessionId];
    expect(await t.prisma.sessionQuality.count({ where: { sessionId: { in: sessionIds } } })).toBe(3);
    expect(
      await t.prisma.participantQuality.findFirstOrThrow({
        where: { participant: { discordUserId: 'console:careful' } },
      }),
    ).toMatchObject({ sessions: 2 });
    expect(await refreshQuality(t.prisma, { participantIds: ids })).toEqual({
      sessions: 3,
      participants: 0,
      flagged: [],
    });
  });

  it('ends the session, storing nothing, when the agent keeps writing over the cap', async () => {
    await acceptConsent(t.prisma, 'console:e', 'e');
    const s = await rt.engine.start({ externalId: 'console:e', displayName: 'e' }, 'backend');
    mode = 'huge';
    const calls = agent.calls;
    await expect(rt.engine.agentStep(s.sessionId)).rejects.toBeInstanceOf(TurnRejectedError);
    mode = 'chatty';
    expect(agent.calls - calls).toBe(3); // one try and two retries
    const stored = await t.prisma.session.findUniqueOrThrow({ where: { id: s.sessionId }, include: { turns: true } });
    expect(stored.status).toBe('abandoned');
    expect(stored.turns).toHaveLength(0);
  });

  it('switches the deployed policy when another process deploys one (LISTEN/NOTIFY, not polling)', async () => {
    expect(rt.policies.deployed?.name).toBe('p1');
    const other = await openDatabase({ databaseUrl: t.url, pgliteDir: '/nonexistent' });
    try {
      await other.prisma.policyVersion.create({
        data: { name: 'p2', algorithm: 'sweet', checkpointPath: '/y', checkpointSha256: '2'.repeat(64) },
      });
      await deployPolicyByName(other, 'trainer', 'p2');
    } finally {
      await other.close();
    }
    const deadline = Date.now() + 10_000; // the poll runs every 60 s: only the notification can be this quick
    while (rt.policies.deployed?.name !== 'p2' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(rt.policies.deployed?.name).toBe('p2');
  });
});
