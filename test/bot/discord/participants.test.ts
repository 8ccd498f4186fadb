// End to end over the fake Discord: collaborator quality and moderators' control over training data. A person
// who pastes the hidden reference into the thread is flagged and listed by /mod participants with the signal; a
// careful person is not; /mod exclude-training takes a person's sessions out of the trainer's next snapshot while
// the export keeps them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import type { ChatMessage } from '../../../tasks/agent.ts';
import { storeFinishedSession } from '../../../prisma/finished-session-store.ts';
import { PASTE_FLAG_REASON } from '../../../prisma/quality-store.ts';
import { createRun } from '../../../trainer/runs.ts';
import { trainConfig } from '../../../trainer/presets.ts';
import type { FakeUser } from '../../../testing/fake-discord.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const tasks = (builtinTasks({ kind: 'backend' }) as (TaskRecord & BackendTask)[])
  .filter((t) => t.split === 'train')
  .slice(0, 3);
const QUESTION = 'Before I write it: which details matter most to you, for example rates or rounding?';

function taskOf(dialogue: ChatMessage[]): TaskRecord & BackendTask {
  const first = dialogue.find((m) => m.role === 'user')!.content;
  return tasks.find((x) => first.includes(x.description))!;
}

const agent = scriptedAgent('scripted', (d) =>
  d.filter((m) => m.role === 'assistant').length === 0
    ? QUESTION
    : `Thanks.\nI WANT TO ANSWER:\n\`\`\`python\n${taskOf(d).reference}\`\`\``,
);

// Listing people and excluding them act on every guild: an operator does it (bot/discord/permissions.ts).
let boss: FakeUser;
const h = new BotHarness({
  tasks,
  agent,
  botOptions: (fake) => {
    boss ??= fake.user('boss');
    return { operatorIds: [boss.id] };
  },
});
beforeAll(async () => {
  await h.start();
}, 120_000);
afterAll(async () => {
  await h.stop();
});

async function mod(sub: string, options: Record<string, string | number | FakeUser> = {}) {
  const i = h.fake.command(boss, 'mod', sub, options, { moderator: true });
  return h.reply(i, (s) => s.kind === 'original' && s.content.length > 0, `/mod ${sub}`);
}

/** Plays one session: the person answers the agent's question with `reply` after `waitMs`, then rates it. */
async function play(
  user: FakeUser,
  reply: (task: TaskRecord & BackendTask) => string,
  waitMs: number,
): Promise<string> {
  const { threadId } = await h.startSession(user, 'backend');
  await h.agentMessage(threadId, 1);
  const session = await h.tdb.prisma.session.findFirstOrThrow({ where: { threadId }, include: { task: true } });
  const task = tasks.find((t) => t.description === session.task.description)!;
  await new Promise((r) => setTimeout(r, waitMs));
  h.fake.say(user, threadId, reply(task));
  const rating = await h.fake.waitFor(
    () => h.fake.inChannel(threadId).find((s) => s.content.includes('How helpful')),
    60_000,
    'rating buttons',
  );
  const click = h.fake.click(user, rating, `rate:${session.id}:4`);
  await h.reply(click, (s) => s.content.includes('you rated the agent 4/5'), 'rating thanks');
  return session.id;
}

describe('collaborator quality over the fake Discord', () => {
  let carolUser: FakeUser;
  let mallory: FakeUser;
  let carolSession: string;
  let mallorySession: string;

  it('a person who pastes the reference is flagged and listed with the signal; a careful person is not', async () => {
    carolUser = h.fake.user('carol');
    mallory = h.fake.user('mallory');
    // The question has 14 words: a careful reader needs about 1.75 s before answering.
    carolSession = await play(
      carolUser,
      () => 'Use the rates from my notes and round the result to cents, please.',
      2_500,
    );
    mallorySession = await play(mallory, (t) => t.reference.split('\n').slice(1).join('\n').slice(0, 380), 0);

    const listing = await mod('participants');
    const lines = listing.content.split('\n');
    const malloryLine = lines.find((l) => l.includes(`<@${mallory.id}>`))!;
    const carolLine = lines.find((l) => l.includes(`<@${carolUser.id}>`))!;
    expect(malloryLine).toMatch(/quality 0\.00 over 1 session\(s\); signals: referencePasted x1/);
    expect(carolLine).toMatch(/quality 1\.00 over 1 session\(s\); signals: none/);
    // Lowest quality first.
    expect(lines.indexOf(malloryLine)).toBeLessThan(lines.indexOf(carolLine));
    const flag = await h.tdb.prisma.moderationFlag.findFirstOrThrow({ where: { sessionId: mallorySession } });
    expect(flag.reason).toBe(PASTE_FLAG_REASON);
    expect(await h.tdb.prisma.moderationFlag.count({ where: { sessionId: carolSession } })).toBe(0);
    // Listing again flags nothing twice.
    await mod('participants');
    expect(await h.tdb.prisma.moderationFlag.count({ where: { sessionId: mallorySession } })).toBe(1);
  }, 180_000);

  it("/mod exclude-training removes a person from the trainer's next snapshot but not from the export", async () => {
    for (let k = 0; k < 2; k++) {
      await storeFinishedSession(h.tdb.prisma, {
        taskId: (await h.tdb.prisma.task.findFirstOrThrow()).id,
        policyVersionId: h.policy.id,
        collaborator: 'rule-simulator',
        channel: 'simulated',
        turns: [{ role: 'agent', content: 'I WANT TO ANSWER: def f(): pass' }],
        answer: 'def f(): pass',
        endReason: 'answered',
        evaluation: { score: k / 2, success: false, detail: {}, evaluatorVersion: 'test' } as never,
        startedAt: new Date(),
        endedAt: new Date(),
      });
    }
    const snapshot = async () => {
      const run = await createRun(
        { prisma: h.tdb.prisma, checkpointRoot: '/tmp/unused' },
        {
          algorithm: 'rft',
          preset: 'cpu-small',
          train: trainConfig('cpu-small'),
          fromVersionId: h.policy.id,
          fromVersionName: h.policy.name,
          fromCheckpoint: '/tmp/unused',
          kind: 'backend',
          ratingWeight: 0,
          data: { source: 'both', simulatedWeight: 1, seed: 1 },
        },
      );
      return (run.dataSnapshot as { sessions: { id: string }[] }).sessions.map((s) => s.id);
    };
    const before = await snapshot();
    expect(before).toContain(carolSession);
    expect(before).not.toContain(mallorySession); // flagged
    const exportBefore = (await mod('export', { format: 'jsonl' })).content;

    const r = await mod('exclude-training', { user: carolUser, reason: 'testing' });
    expect(r.content).toContain('left out of training');
    const after = await snapshot();
    expect(after).not.toContain(carolSession);
    expect(after.length).toBe(before.length - 1);
    const exportAfter = (await mod('export', { format: 'jsonl' })).content;
    expect(exportAfter).toMatch(/Export: \d+ session\(s\)/);
    expect(/Export: (\d+)/.exec(exportAfter)![1]).toBe(/Export: (\d+)/.exec(exportBefore)![1]);
    const listing = await mod('participants');
    expect(listing.content.split('\n').find((l) => l.includes(`<@${carolUser.id}>`))).toContain(
      'excluded from training',
    );

    expect((await mod('include-training', { user: carolUser })).content).toContain('used for training again');
    expect(await snapshot()).toContain(carolSession);
    const actions = (await h.tdb.prisma.auditLog.findMany({ where: { target: carolUser.id } })).map((a) => a.action);
    expect(actions).toEqual(expect.arrayContaining(['participant.exclude-training', 'participant.include-training']));
  }, 180_000);

  it('a gold check replays a known session; a made-up fact fails it, and the session is never training data', async () => {
    const GOLD_QUESTION = 'Which rate applies for each extra unit, and is anything rounded?';
    for (const t of tasks) {
      const task = await h.tdb.prisma.task.findFirstOrThrow({ where: { description: t.description } });
      await storeFinishedSession(h.tdb.prisma, {
        taskId: task.id,
        policyVersionId: h.policy.id,
        collaborator: 'rule-simulator',
        channel: 'simulated',
        turns: [
          { role: 'agent', content: GOLD_QUESTION },
          { role: 'human', content: 'I do not know.' },
          { role: 'agent', content: `I WANT TO ANSWER:\n\`\`\`python\n${t.reference}\`\`\`` },
        ],
        answer: t.reference,
        endReason: 'answered',
        evaluation: { score: 1, success: true, detail: {}, evaluatorVersion: 'test' } as never,
        startedAt: new Date(),
        endedAt: new Date(),
      });
    }
    expect((await mod('gold', { share: 100 })).content).toContain('Gold checks: 100% of new backend sessions (was 0%)');

    const gus = h.fake.user('gus');
    const { threadId } = await h.startSession(gus, 'backend');
    const first = await h.agentMessage(threadId, 1);
    expect(first.content).toContain(GOLD_QUESTION); // replayed, not the scripted agent's question
    expect(h.fake.inChannel(threadId).find((m) => m.content.includes('Here is your'))!.content).toContain(
      'agent version not shown',
    );
    const session = await h.tdb.prisma.session.findFirstOrThrow({ where: { threadId } });
    expect(session.goldSourceId).not.toBeNull();
    expect(session.policyVersionId).toBeNull();
    expect(session.experimentId).toBeNull();
    await new Promise((r) => setTimeout(r, 2_000));
    h.fake.say(gus, threadId, 'Each extra unit costs 98765.43 and totals are rounded to 7 places.');
    const rating = await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((m) => m.content.includes('How helpful')),
      60_000,
      'rating buttons',
    );
    await h.reply(
      h.fake.click(gus, rating, `rate:${session.id}:4`),
      (m) => m.content.includes('you rated the agent 4/5'),
      'rating thanks',
    );
    const evaluated = await h.tdb.prisma.evaluation.findUniqueOrThrow({ where: { sessionId: session.id } });
    expect(evaluated.success).toBe(true); // the source's answer, scored by the real evaluator

    const listing = await mod('participants');
    expect(listing.content.split('\n').find((l) => l.includes(`<@${gus.id}>`))).toMatch(
      /quality 0\.50 over 1 session\(s\); signals: goldFailed x1/,
    );
    const q = await h.tdb.prisma.sessionQuality.findUniqueOrThrow({ where: { sessionId: session.id } });
    expect((q.signals as { goldViolations: string[] }).goldViolations).toEqual(['98765.43', '7']);
    const { loadTrajectories } = await import('../../../trainer/data.ts');
    const usable = await loadTrajectories(h.tdb.prisma, { ratingWeight: 0, source: 'both' });
    expect(usable.map((u) => u.sessionId)).not.toContain(session.id);

    await mod('gold', { share: 0 });
    const ivy = h.fake.user('ivy');
    const normal = await h.startSession(ivy, 'backend');
    expect((await h.agentMessage(normal.threadId, 1)).content).toContain(QUESTION);
    expect(await h.tdb.prisma.auditLog.count({ where: { action: 'gold.share' } })).toBe(2);
  }, 180_000);
});
