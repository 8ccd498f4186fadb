// End to end: A/B experiments with real people, driven by moderators over the fake Discord (real discord.js
// client, real Postgres, the real backend sandbox scoring the answers). The candidate's agent answers with the
// task's reference, the control's with a wrong function, so the arms differ in a known way.
// - /mod experiment start sets the arms of the study collecting there (the default study): the deployed version
//   as control, the candidate with its share. Over 300 sessions started through the engine, every session is
//   assigned by those arms (bot/assign.ts armFor, replayed here), each task's sessions are split in the share to
//   within one session and every task with two sessions or more has both arms (paired by task).
// - The person is not told which version plays.
// - /mod experiment status shows both arms with intervals, the difference with its p-value, and the same paired
//   by task.
// - /mod experiment stop outcome:promote deploys the candidate (audited) and the default study plays the
//   deployed version again; discard leaves the deployed version.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import type { ChatMessage } from '../../../tasks/agent.ts';
import type { PolicyVersion } from '../../../prisma/generated/client.ts';
import type { SessionView } from '../../../bot/session/engine.ts';
import { armFor } from '../../../bot/assign.ts';
import { findStudy } from '../../../prisma/study-store.ts';
import { writeReport } from '../../../bot/report/report.ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeUser } from '../../../testing/fake-discord.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

// Eight training tasks: the default study fills them in turn, so each gets many sessions of each arm.
const tasks = builtinTasks({ kind: 'backend', split: 'train' }).slice(0, 8) as (TaskRecord & BackendTask)[];

function taskOf(dialogue: ChatMessage[]): TaskRecord & BackendTask {
  const first = dialogue.find((m) => m.role === 'user')!.content;
  const t = tasks.find((x) => first.includes(x.description));
  if (!t) throw new Error('the dialogue does not start with a known task');
  return t;
}

/**
 * When set, both agents ask one question before answering, so the session stays active until the person replies:
 * a test that looks at a running session must not race the agent's immediate answer (which ends it).
 */
let askFirst = false;
function asking(answer: (d: ChatMessage[]) => string): (d: ChatMessage[]) => string {
  // The first user message is the task itself; any later one is the person's reply.
  return (d) =>
    askFirst && d.filter((m) => m.role === 'user').length < 2
      ? 'What should the function return when the input is empty?'
      : answer(d);
}

const right = scriptedAgent(
  'right',
  asking((d) => `I WANT TO ANSWER:\n\`\`\`python\n${taskOf(d).reference}\`\`\``),
);
const wrong = scriptedAgent(
  'wrong',
  asking((d) => `I WANT TO ANSWER:\n\`\`\`python\n${taskOf(d).reference.split('\n')[0]}\n    return None\n\`\`\``),
);

/** A view that shows nothing: these sessions are driven through the engine, not a channel. */
const quietView: SessionView = {
  showAgentMessage: async (step) => `shown-${step.turnId}`,
  showResult: async () => {},
  askRating: async () => {},
  notice: async () => {},
};

let candidate: PolicyVersion;
// Experiments act on every guild: an operator runs them (bot/discord/permissions.ts).
let boss: FakeUser;
const h = new BotHarness({
  tasks,
  agent: wrong,
  agentFor: (p) => (p.name === 'cand-1' ? right : wrong),
  botOptions: (fake) => {
    boss ??= fake.user('boss');
    return { operatorIds: [boss.id] };
  },
});

beforeAll(async () => {
  await h.start();
  candidate = await h.tdb.prisma.policyVersion.create({
    data: {
      name: 'cand-1',
      algorithm: 'external',
      checkpointPath: '/nonexistent',
      checkpointSha256: '1'.repeat(64),
      status: 'candidate',
    },
  });
}, 120_000);
afterAll(async () => {
  await h.stop();
});

async function people(prefix: string, n: number): Promise<{ externalId: string; displayName: string }[]> {
  const list = Array.from({ length: n }, (_, i) => ({
    externalId: `${prefix}${String(i).padStart(4, '0')}`,
    displayName: `p${i}`,
  }));
  await h.tdb.prisma.participant.createMany({
    data: list.map((p) => ({ discordUserId: p.externalId, displayName: p.displayName, consentGivenAt: new Date() })),
  });
  return list;
}

async function mod(sub: string, options: Record<string, string | number>) {
  const i = h.fake.command(boss, 'mod', sub, options, { moderator: true });
  return h.reply(i, (s) => s.kind === 'original' && s.content.length > 0, `/mod ${sub}`);
}

describe('A/B experiments over the fake Discord', () => {
  it('only moderators can start one, and a bad candidate is refused with a clear message', async () => {
    const eve = h.fake.user('eve');
    const i = h.fake.command(eve, 'mod', 'experiment start', { candidate: 'cand-1', share: 30 });
    expect((await h.reply(i, (r) => /moderator/i.test(r.content), 'the refusal')).content).toMatch(/moderator/i);
    // A guild moderator who is not an operator cannot either: an experiment changes what every guild plays.
    const guildMod = h.fake.command(
      h.fake.user('guild-mod'),
      'mod',
      'experiment start',
      { candidate: 'cand-1', share: 30 },
      { moderator: true },
    );
    expect((await h.reply(guildMod, (r) => /operator/i.test(r.content), 'the operators-only refusal')).content).toMatch(
      /operators only/i,
    );
    expect((await mod('experiment start', { candidate: 'nope', share: 30 })).content).toContain(
      'No policy version named "nope"',
    );
    expect((await mod('experiment start', { candidate: 'test-policy', share: 30 })).content).toContain(
      'is the deployed version already',
    );
    expect((await mod('experiment status', {})).content).toContain('No experiment has been run yet in study default');
    expect(await h.tdb.prisma.experiment.count()).toBe(0);
  });

  it('assigns 300 new sessions of the default study by its arms, 30% to the candidate within each task, paired by task', async () => {
    const started = await mod('experiment start', { candidate: 'cand-1', share: 30 });
    expect(started.content).toContain('Started');
    expect(started.content).toContain(
      "in study **default**: candidate **cand-1** vs control **test-policy**, 30% of each task's sessions on the candidate",
    );
    const e = await h.tdb.prisma.experiment.findFirstOrThrow({ where: { status: 'running' } });
    expect(e.controlId).toBe(h.policy.id);
    expect(await h.tdb.prisma.auditLog.count({ where: { action: 'experiment.start', target: 'cand-1' } })).toBe(1);
    // The experiment is the default study's arms: one assignment mechanism.
    const study = (await findStudy(h.tdb.prisma, 'default'))!;
    expect(e.studyId).toBe(study.id);
    expect(study.arms.map((a) => [a.policyVersion.name, a.share]).sort()).toEqual([
      ['cand-1', 30],
      ['test-policy', 70],
    ]);

    const crowd = await people('4000000000000', 300);
    const order: string[] = [];
    for (const p of crowd) order.push((await h.runtime.engine.start(p, 'backend')).sessionId);
    const stored = await h.tdb.prisma.session.findMany({ where: { experimentId: e.id } });
    expect(stored).toHaveLength(300);
    const sessions = order.map((id) => stored.find((s) => s.id === id)!);
    for (const s of sessions) expect([h.policy.id, candidate.id]).toContain(s.policyVersionId);
    const positions = new Map(
      (await h.tdb.prisma.studyTask.findMany({ where: { studyId: study.id } })).map((x) => [x.taskId, x.position]),
    );
    const byTask = new Map<string, typeof sessions>();
    for (const s of sessions) byTask.set(s.taskId, [...(byTask.get(s.taskId) ?? []), s]);
    expect(byTask.size).toBe(tasks.length);
    for (const [taskId, list] of byTask) {
      // Replaying the study's rule in the order the sessions started gives exactly the stored arms.
      const counts = new Map<string, number>();
      for (const s of list) {
        expect(s.policyVersionId).toBe(armFor(study, positions.get(taskId)!, counts).policyVersionId);
        counts.set(s.policyVersionId!, (counts.get(s.policyVersionId!) ?? 0) + 1);
      }
      const cand = list.filter((s) => s.policyVersionId === candidate.id).length;
      expect(Math.abs(cand - 0.3 * list.length)).toBeLessThan(1);
      expect(list.length).toBeGreaterThanOrEqual(2);
      expect(cand).toBeGreaterThan(0);
      expect(cand).toBeLessThan(list.length);
    }
    const onCandidate = sessions.filter((s) => s.policyVersionId === candidate.id);
    expect(Math.abs(onCandidate.length - 90)).toBeLessThan(tasks.length);
    for (const p of crowd) await h.runtime.engine.stop(p.externalId);

    const stopped = await mod('experiment stop', { outcome: 'discard' });
    expect(stopped.content).toContain('discarded');
    expect((await h.tdb.prisma.policyVersion.findUniqueOrThrow({ where: { id: h.policy.id } })).status).toBe(
      'deployed',
    );
    expect((await h.tdb.prisma.experiment.findUniqueOrThrow({ where: { id: e.id } })).outcome).toBe('discard');
    // The default study plays the deployed version again; sessions keep the period and version they were played in.
    expect((await findStudy(h.tdb.prisma, 'default'))!.arms).toEqual([]);
    expect(await h.tdb.prisma.session.count({ where: { experimentId: e.id, policyVersionId: candidate.id } })).toBe(
      onCandidate.length,
    );
  }, 300_000);

  it('the person is not told which version plays', async () => {
    await mod('experiment start', { candidate: 'cand-1', share: 50 });
    const alice = h.fake.user('alice');
    askFirst = true;
    let threadId: string;
    try {
      threadId = (await h.startSession(alice, 'backend')).threadId;
      // The session is running (the agent asked and waits for alice) when she asks for its status.
      const asked = await h.agentMessage(threadId, 1);
      expect(asked.content).not.toMatch(/cand-1|test-policy/);
    } finally {
      askFirst = false;
    }
    const intro = await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('Here is your')),
      30_000,
      'intro',
    );
    expect(intro.content).toContain('agent version not shown during an experiment');
    expect(intro.content).not.toContain('cand-1');
    expect(intro.content).not.toContain('test-policy');
    const status = h.fake.command(alice, 'task', 'status', {});
    const shown = await h.reply(status, (s) => s.kind === 'original' && s.content.length > 0, '/task status');
    expect(shown.content).toContain('your turn to answer');
    expect(shown.content).toContain('Policy: not shown during an experiment');
    expect(shown.content).not.toContain('cand-1');
    expect(shown.content).not.toContain('test-policy');
    await h.runtime.engine.stop(alice.id);
  }, 120_000);

  it('status shows both arms with intervals and the difference with its p-value; promote deploys the candidate', async () => {
    const e = await h.tdb.prisma.experiment.findFirstOrThrow({ where: { status: 'running' } });
    const crowd = await people('5000000000000', 16);
    for (const [k, p] of crowd.entries()) {
      const s = await h.runtime.engine.start(p, 'backend');
      expect(await h.runtime.engine.advance(s.sessionId, quietView)).toBe('awaiting-rating');
      await h.runtime.engine.rate(s.sessionId, p, 1 + (k % 5));
    }
    const arms = await h.tdb.prisma.session.groupBy({
      by: ['policyVersionId'],
      where: { experimentId: e.id, status: 'answered' },
      _count: { _all: true },
    });
    expect(arms.map((a) => a.policyVersionId).sort()).toEqual([h.policy.id, candidate.id].sort());

    const status = await mod('experiment status', {});
    const text = status.content;
    expect(text).toContain('candidate **cand-1** vs control **test-policy**');
    expect(text).toMatch(/\*\*backend\*\* — control test-policy: \d+ session\(s\)/);
    // The candidate answers with the reference (all tests pass), the control does not.
    expect(text).toMatch(
      /success: control 0\.0% \[0\.0%, [\d.]+%\] · candidate 100\.0% \[[\d.]+%, 100\.0%\] · difference \+100\.0 pts \[\+[\d.]+ pts, \+100\.0 pts\], p=[\d.e-]+ \(Fisher\)/,
    );
    expect(text).toMatch(/% tests passed: control [\d.]+% /);
    expect(text).toMatch(/rating: control [\d.]+/);
    expect(text).toMatch(
      /agent turns: control 1\.00 \[1\.00, 1\.00\] · candidate 1\.00 \[1\.00, 1\.00\] · difference \+0\.00 \[\+0\.00, \+0\.00\], p=1\.000/,
    );
    expect(text).toMatch(/abandoned: control/);
    const p = Number(/success:.*p=([\d.e-]+)/.exec(text)![1]);
    expect(p).toBeLessThan(0.05);
    // Paired by task: the eight tasks got two sessions each (the default study fills the fewest first), one per arm.
    expect(text).toContain(
      'paired by task (8 task(s) played in both arms): success +100.0 pts [+100.0 pts, +100.0 pts], p=0.008; % tests passed +',
    );

    const stopped = await mod('experiment stop', { outcome: 'promote' });
    expect(stopped.content).toContain('cand-1 is promoted and deployed');
    const deployed = await h.tdb.prisma.policyVersion.findFirstOrThrow({ where: { status: 'deployed' } });
    expect(deployed.name).toBe('cand-1');
    const audits = await h.tdb.prisma.auditLog.findMany({
      where: { action: { in: ['experiment.promote', 'experiment.stop'] } },
      orderBy: { createdAt: 'asc' },
    });
    expect(audits.some((a) => a.action === 'experiment.promote' && a.target === 'cand-1')).toBe(true);
    const stopAudit = audits.filter((a) => a.action === 'experiment.stop').at(-1)!;
    expect(stopAudit.detail).toMatchObject({
      outcome: 'promote',
      study: 'default',
      experimentId: e.id,
      arms: 'the deployed version',
    });
    expect(
      (stopAudit.detail as { figures: { pairedByTask: { tasks: number } }[] }).figures[0]!.pairedByTask.tasks,
    ).toBe(8);
    expect((await findStudy(h.tdb.prisma, 'default'))!.arms).toEqual([]);
    // New sessions now get the candidate, with no experiment running.
    const [late] = await people('6000000000000', 1);
    const s = await h.runtime.engine.start(late!, 'backend');
    expect(s.blind).toBe(false);
    expect(s.policyName).toBe('cand-1');
    expect((await mod('experiment stop', { outcome: 'discard' })).content).toContain('No experiment is running');
  }, 300_000);

  it('sweetloop report shows each experiment, its arms and the differences with p-values', async () => {
    const out = mkdtempSync(join(tmpdir(), 'sweetloop-ab-report-'));
    try {
      const { data } = await writeReport(h.tdb.prisma, { outDir: out, chromiumPath: null });
      expect(data.experiments!.map((e) => [e.candidate, e.status, e.outcome])).toEqual([
        ['cand-1', 'stopped', 'promote'],
        ['cand-1', 'stopped', 'discard'],
      ]);
      const md = readFileSync(join(out, 'report.md'), 'utf8');
      expect(md).toContain('## A/B experiments with people');
      expect(md).toContain('### cand-1 vs test-policy');
      expect(md).toMatch(
        /\| success \| 0\.0% \[0\.0%, [\d.]+%\] \| 100\.0% \[[\d.]+%, 100\.0%\] \| difference \+100\.0 pts .*p=[\d.e-]+ \(Fisher\) \|/,
      );
      expect(md).toMatch(/\| % tests passed \| /);
      expect(md).toMatch(/\| abandoned \| /);
      expect(md).toContain("in study default: 50% of each task's sessions on the candidate");
      expect(md).toContain('paired by task (8 task(s) played in both arms): success +100.0 pts');
      const json = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
      expect(json.experiments[0].comparisons[0].kind).toBe('backend');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);
});
