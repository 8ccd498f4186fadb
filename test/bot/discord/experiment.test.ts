// End to end: A/B experiments with real people, driven by moderators over the fake Discord (real discord.js
// client, real Postgres, the real backend sandbox scoring the answers). The candidate's agent answers with the
// task's reference, the control's with a wrong function, so the arms differ in a known way.
// - Over 300 sessions started through the engine, the candidate's share falls inside the binomial interval of
//   the configured share, each task's sessions are split by the permuted blocks, and the stored arms are exactly
//   those the seeded assignment gives (reproducible).
// - The person is not told which version plays.
// - /mod experiment status shows both arms with intervals and the difference with its p-value.
// - /mod experiment stop outcome:promote deploys the candidate (audited); discard leaves the deployed version.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import type { ChatMessage } from '../../../tasks/agent.ts';
import type { PolicyVersion } from '../../../prisma/generated/client.ts';
import type { SessionView } from '../../../bot/session/engine.ts';
import { armFor } from '../../../bot/experiments.ts';
import { binomialCdf } from '../../../tasks/stats.ts';
import { writeReport } from '../../../bot/report/report.ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeUser } from '../../../bot/testing/fake-discord.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const tasks = builtinTasks({ kind: 'backend' }) as (TaskRecord & BackendTask)[];

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
  return (d) => (askFirst && d.filter((m) => m.role === 'user').length < 2 ? 'What should the function return when the input is empty?' : answer(d));
}

const right = scriptedAgent('right', asking((d) => `I WANT TO ANSWER:\n\`\`\`python\n${taskOf(d).reference}\`\`\``));
const wrong = scriptedAgent('wrong', asking((d) => `I WANT TO ANSWER:\n\`\`\`python\n${taskOf(d).reference.split('\n')[0]}\n    return None\n\`\`\``));

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
    data: { name: 'cand-1', algorithm: 'external', checkpointPath: '/nonexistent', checkpointSha256: '1'.repeat(64), status: 'candidate' },
  });
}, 120_000);
afterAll(async () => {
  await h.stop();
});

/** Binomial(n, p) quantile: the least k with P(X <= k) >= q. */
function binomialQuantile(q: number, n: number, p: number): number {
  let k = 0;
  while (binomialCdf(k, n, p) < q) k++;
  return k;
}

async function people(prefix: string, n: number): Promise<{ externalId: string; displayName: string }[]> {
  const list = Array.from({ length: n }, (_, i) => ({ externalId: `${prefix}${String(i).padStart(4, '0')}`, displayName: `p${i}` }));
  await h.tdb.prisma.participant.createMany({ data: list.map((p) => ({ discordUserId: p.externalId, displayName: p.displayName, consentGivenAt: new Date() })) });
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
    const guildMod = h.fake.command(h.fake.user('guild-mod'), 'mod', 'experiment start', { candidate: 'cand-1', share: 30 }, { moderator: true });
    expect((await h.reply(guildMod, (r) => /operator/i.test(r.content), 'the operators-only refusal')).content).toMatch(/operators only/i);
    expect((await mod('experiment start', { candidate: 'nope', share: 30 })).content).toContain('No policy version named "nope"');
    expect((await mod('experiment start', { candidate: 'test-policy', share: 30 })).content).toContain('is the deployed version already');
    expect((await mod('experiment status', {})).content).toContain('No experiment has been run yet');
    expect(await h.tdb.prisma.experiment.count()).toBe(0);
  });

  it('assigns 30% of 300 new sessions to the candidate, balanced per task, reproducibly', async () => {
    const started = await mod('experiment start', { candidate: 'cand-1', share: 30, seed: 7 });
    expect(started.content).toContain('Started');
    expect(started.content).toContain('30% of new sessions on the candidate');
    const e = await h.tdb.prisma.experiment.findFirstOrThrow({ where: { status: 'running' } });
    expect(e.controlId).toBe(h.policy.id);
    expect(await h.tdb.prisma.auditLog.count({ where: { action: 'experiment.start', target: 'cand-1' } })).toBe(1);

    const crowd = await people('4000000000000', 300);
    for (const p of crowd) await h.runtime.engine.start(p, 'backend');
    const sessions = await h.tdb.prisma.session.findMany({ where: { experimentId: e.id }, orderBy: [{ startedAt: 'asc' }, { id: 'asc' }] });
    expect(sessions).toHaveLength(300);
    const onCandidate = sessions.filter((s) => s.arm === 'candidate');
    // The 99.9% two-sided binomial interval of the count under Binomial(300, 0.3).
    const lo = binomialQuantile(0.0005, 300, 0.3);
    const hi = binomialQuantile(0.9995, 300, 0.3);
    expect(onCandidate.length).toBeGreaterThanOrEqual(lo);
    expect(onCandidate.length).toBeLessThanOrEqual(hi);
    // The arm decides the version; every session has one.
    for (const s of sessions) expect(s.policyVersionId).toBe(s.arm === 'candidate' ? candidate.id : h.policy.id);
    // Per task: the n-th session's arm is the seeded block's (reproducible), and a task's split never strays
    // from 30% by more than one block's worth (blocks of 10 hold 3 candidate slots).
    const byTask = new Map<string, typeof sessions>();
    for (const s of sessions) byTask.set(s.taskId, [...(byTask.get(s.taskId) ?? []), s]);
    expect(byTask.size).toBeGreaterThan(5);
    for (const [taskId, list] of byTask) {
      list.forEach((s, n) => expect(s.arm).toBe(armFor(e, taskId, n)));
      const cand = list.filter((s) => s.arm === 'candidate').length;
      expect(Math.abs(cand - 0.3 * list.length)).toBeLessThanOrEqual(7);
    }
    for (const p of crowd) await h.runtime.engine.stop(p.externalId);

    const stopped = await mod('experiment stop', { outcome: 'discard' });
    expect(stopped.content).toContain('discarded');
    expect((await h.tdb.prisma.policyVersion.findUniqueOrThrow({ where: { id: h.policy.id } })).status).toBe('deployed');
    expect((await h.tdb.prisma.experiment.findUniqueOrThrow({ where: { id: e.id } })).outcome).toBe('discard');
    // Sessions keep the arm they were played in.
    expect(await h.tdb.prisma.session.count({ where: { experimentId: e.id, arm: 'candidate' } })).toBe(onCandidate.length);
  }, 300_000);

  it('the person is not told which version plays', async () => {
    await mod('experiment start', { candidate: 'cand-1', share: 50, seed: 11 });
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
    const intro = await h.fake.waitFor(() => h.fake.inChannel(threadId).find((s) => s.content.includes('Here is your')), 30_000, 'intro');
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
    const arms = await h.tdb.prisma.session.groupBy({ by: ['arm'], where: { experimentId: e.id, status: 'answered' }, _count: { _all: true } });
    expect(arms.map((a) => a.arm).sort()).toEqual(['candidate', 'control']);

    const status = await mod('experiment status', {});
    const text = status.content;
    expect(text).toContain('candidate **cand-1** vs control **test-policy**');
    expect(text).toMatch(/\*\*backend\*\* — control: \d+ session\(s\)/);
    // The candidate answers with the reference (all tests pass), the control does not.
    expect(text).toMatch(/success: control 0\.0% \[0\.0%, [\d.]+%\] · candidate 100\.0% \[[\d.]+%, 100\.0%\] · difference \+100\.0 pts \[\+[\d.]+ pts, \+100\.0 pts\], p=[\d.e-]+ \(Fisher\)/);
    expect(text).toMatch(/% tests passed: control [\d.]+% /);
    expect(text).toMatch(/rating: control [\d.]+/);
    expect(text).toMatch(/agent turns: control 1\.00 \[1\.00, 1\.00\] · candidate 1\.00 \[1\.00, 1\.00\] · difference \+0\.00 \[\+0\.00, \+0\.00\], p=1\.000/);
    expect(text).toMatch(/abandoned: control/);
    const p = Number(/success:.*p=([\d.e-]+)/.exec(text)![1]);
    expect(p).toBeLessThan(0.05);

    const stopped = await mod('experiment stop', { outcome: 'promote' });
    expect(stopped.content).toContain('cand-1 is promoted and deployed');
    const deployed = await h.tdb.prisma.policyVersion.findFirstOrThrow({ where: { status: 'deployed' } });
    expect(deployed.name).toBe('cand-1');
    const audits = await h.tdb.prisma.auditLog.findMany({ where: { action: { in: ['experiment.promote', 'experiment.stop'] } }, orderBy: { createdAt: 'asc' } });
    expect(audits.some((a) => a.action === 'experiment.promote' && a.target === 'cand-1')).toBe(true);
    const stopAudit = audits.filter((a) => a.action === 'experiment.stop').at(-1)!;
    expect((stopAudit.detail as { outcome: string }).outcome).toBe('promote');
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
      expect(md).toMatch(/\| success \| 0\.0% \[0\.0%, [\d.]+%\] \| 100\.0% \[[\d.]+%, 100\.0%\] \| difference \+100\.0 pts .*p=[\d.e-]+ \(Fisher\) \|/);
      expect(md).toMatch(/\| % tests passed \| /);
      expect(md).toMatch(/\| abandoned \| /);
      const json = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
      expect(json.experiments[0].comparisons[0].kind).toBe('backend');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);
});
