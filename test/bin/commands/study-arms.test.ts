// `sweetloop study arms start|status|stop` end to end: the real binary and a real database. Starting an A/B makes
// the study's arms the control and the candidate; the sessions the study then assigns (bot/assign.ts, the one
// assignment path) split each task between them; status compares the arms, also paired by task; stop --promote
// deploys the candidate and leaves it alone in the study, --discard drops an arm; every start and stop is audited
// with the actor "cli". Wrong requests get a clear error and change nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { runSweetloop, type SweetloopRun } from '../../../testing/sweetloop-cli.ts';
import { builtinTasks } from '../../../tasks/library.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import { findStudy } from '../../../prisma/study-store.ts';
import { createSession } from '../../../prisma/session-store.ts';
import { assignTask } from '../../../bot/assign.ts';

let t: TestDatabase;
const versions: Record<string, string> = {};

function sweetloop(args: string[]): Promise<SweetloopRun> {
  const { DISCORD_TOKEN: _token, ...rest } = process.env;
  return runSweetloop(args, { env: { ...rest, LOG_LEVEL: 'warn', DATABASE_URL: t.url }, timeoutMs: 120_000 });
}

const arms = async (study: string) =>
  (await findStudy(t.prisma, study))!.arms.map((a) => `${a.policyVersion.name} ${a.share}`).sort();
const deployed = async () => (await t.prisma.policyVersion.findFirstOrThrow({ where: { status: 'deployed' } })).name;
const audits = async () =>
  (
    await t.prisma.auditLog.findMany({
      where: { action: { startsWith: 'experiment.' } },
      orderBy: { createdAt: 'asc' },
    })
  ).map((a) => `${a.actor} ${a.action}:${a.target}`);

beforeAll(async () => {
  t = await createTestDatabase();
  await importTasks(t.prisma, builtinTasks({ kind: 'backend', split: 'train' }).slice(0, 6));
  for (const [name, status] of [
    ['starter', 'deployed'],
    ['sweet-1', 'candidate'],
    ['sweet-2', 'candidate'],
  ] as const) {
    versions[name] = (
      await t.prisma.policyVersion.create({
        data: {
          name,
          algorithm: 'sweet',
          checkpointPath: `/c/${name}`,
          checkpointSha256: 'x',
          status,
          ...(status === 'deployed' ? { deployedAt: new Date() } : {}),
        },
      })
    ).id;
  }
  const create = await sweetloop([
    'study',
    'create',
    'pilot',
    '--kind',
    'backend',
    '--per-task',
    '4',
    '--seed',
    '3',
    '--policy',
    'starter',
  ]);
  expect(create.code, create.stderr).toBe(0);
}, 120_000);

afterAll(async () => {
  await t?.drop();
});

describe('sweetloop study arms', () => {
  it('status of a study with one policy says there is nothing to compare', async () => {
    const r = await sweetloop(['study', 'arms', 'status', 'pilot']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('Study pilot compares no arms (starter 100% plays it) and has had no experiment.');
  });

  it('start makes the study play the candidate against its policy; the study assigns each task to both arms; status compares them, paired by task', async () => {
    const r = await sweetloop(['study', 'arms', 'start', 'pilot', '--candidate', 'sweet-1', '--share', '50']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^started: Experiment [0-9a-f]{8} in study pilot: candidate sweet-1 vs control starter, 50% of each task's sessions on the candidate; running since /,
    );
    expect(await arms('pilot')).toEqual(['starter 50', 'sweet-1 50']);
    expect(
      (await sweetloop(['study', 'arms', 'start', 'pilot', '--candidate', 'sweet-2', '--share', '10'])).stderr,
    ).toContain('An experiment is already running in study "pilot" (candidate sweet-1)');

    // Four people take every task (k = 4) through the study's assignment; the candidate's answers succeed.
    const study = (await findStudy(t.prisma, 'pilot'))!;
    const e = await t.prisma.experiment.findFirstOrThrow({ where: { studyId: study.id, status: 'running' } });
    for (let p = 0; p < 4; p++) {
      const person = await t.prisma.participant.create({
        data: { discordUserId: `50000000000000000${p}`, consentGivenAt: new Date() },
      });
      for (let n = 0; n < 6; n++) {
        const s = await assignTask(t.prisma, study, person.id, 'backend', (tx, pick) =>
          createSession(tx, {
            taskId: pick.taskId,
            participantId: person.id,
            policyVersionId: pick.arm!.policyVersionId,
            experimentId: pick.experimentId,
            studyId: study.id,
            channel: 'discord',
            simulated: false,
          }),
        );
        const win = s.policyVersionId === versions['sweet-1'];
        await t.prisma.session.update({
          where: { id: s.id },
          data: { status: 'answered', endReason: 'answered', turnCount: 2, endedAt: new Date() },
        });
        await t.prisma.evaluation.create({
          data: { sessionId: s.id, score: win ? 1 : 0.25, success: win, detail: {}, evaluatorVersion: 'test' },
        });
      }
    }
    const byTask = await t.prisma.session.groupBy({
      by: ['taskId', 'policyVersionId'],
      where: { experimentId: e.id },
      _count: { _all: true },
    });
    expect(byTask).toHaveLength(12);
    for (const g of byTask) expect(g._count._all).toBe(2);

    const status = await sweetloop(['study', 'arms', 'status', 'pilot']);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(
      'backend — control starter: 12 session(s) (12 ended), candidate sweet-1: 12 session(s) (12 ended)',
    );
    expect(status.stdout).toMatch(
      /success: control 0\.0% \[0\.0%, [\d.]+%\] · candidate 100\.0% \[[\d.]+%, 100\.0%\] · difference \+100\.0 pts .*p=[\d.e-]+ \(Fisher\)/,
    );
    // Six tasks, each played twice by each arm: within every task the candidate is 100 points better (Wilcoxon exact p = 2/64).
    expect(status.stdout).toContain(
      'paired by task (6 task(s) played in both arms): success +100.0 pts [+100.0 pts, +100.0 pts], p=0.031; % tests passed +75.0 pts',
    );
    const json = JSON.parse((await sweetloop(['study', 'arms', 'status', 'pilot', '--json'])).stdout);
    expect(json).toMatchObject({
      study: 'pilot',
      experiment: { candidate: 'sweet-1', control: 'starter', share: 50, status: 'running' },
    });
    expect(json.comparisons[0].paired.tasks).toBe(6);
  }, 180_000);

  it('stop refuses a wrong request and changes nothing; --promote deploys the candidate and leaves it alone in the study', async () => {
    const neither = await sweetloop(['study', 'arms', 'stop', 'pilot']);
    expect(neither.code).not.toBe(0);
    expect(neither.stderr).toContain('Give exactly one of --promote VERSION or --discard VERSION.');
    const wrong = await sweetloop(['study', 'arms', 'stop', 'pilot', '--promote', 'sweet-2']);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain(
      'The experiment running in study "pilot" tests sweet-1: name it to promote or discard it.',
    );
    expect((await sweetloop(['study', 'arms', 'stop', 'nowhere', '--discard', 'sweet-1'])).stderr).toContain(
      'No study named "nowhere".',
    );
    expect(await arms('pilot')).toEqual(['starter 50', 'sweet-1 50']);
    expect(await deployed()).toBe('starter');

    const r = await sweetloop(['study', 'arms', 'stop', 'pilot', '--promote', 'sweet-1']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('sweet-1 promoted and deployed; study pilot is now played by sweet-1 100%');
    expect(await deployed()).toBe('sweet-1');
    expect(await arms('pilot')).toEqual(['sweet-1 100']);
    const e = await t.prisma.experiment.findFirstOrThrow({ where: { study: { name: 'pilot' } } });
    expect(e).toMatchObject({ status: 'stopped', outcome: 'promote', startedBy: 'cli', stoppedBy: 'cli' });
    expect(await audits()).toEqual([
      'cli experiment.start:sweet-1',
      'cli experiment.promote:sweet-1',
      'cli experiment.stop:sweet-1',
    ]);
    const stop = await t.prisma.auditLog.findFirstOrThrow({ where: { action: 'experiment.stop' } });
    expect(stop.detail).toMatchObject({
      study: 'pilot',
      outcome: 'promote',
      experimentId: e.id,
      arms: 'sweet-1 100%',
      figures: [{ kind: 'backend', pairedByTask: { tasks: 6 } }],
    });

    const after = await sweetloop(['study', 'arms', 'status', 'pilot']);
    expect(after.stdout).toContain('stopped');
    expect(after.stdout).toContain('Study pilot is now played by sweet-1 100%.');
  }, 120_000);

  it('a study made with two arms: status compares them, start is refused, --discard drops one and the deployed version stays', async () => {
    const c = await sweetloop([
      'study',
      'create',
      'duo',
      '--kind',
      'backend',
      '--per-task',
      '2',
      '--seed',
      '4',
      '--arm',
      'sweet-2:40',
      '--arm',
      'starter:60',
    ]);
    expect(c.code, c.stderr).toBe(0);
    const status = await sweetloop(['study', 'arms', 'status', 'duo']);
    expect(status.stdout).toContain('Study duo compares its arms:');
    expect(status.stdout).toContain('No session has been played in it yet.');
    expect(
      (await sweetloop(['study', 'arms', 'start', 'duo', '--candidate', 'sweet-1', '--share', '10'])).stderr,
    ).toContain('Study "duo" already splits its sessions between arms');
    const r = await sweetloop(['study', 'arms', 'stop', 'duo', '--discard', 'sweet-2']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('sweet-2 discarded; study duo is now played by starter 100%');
    expect(await arms('duo')).toEqual(['starter 100']);
    expect(await deployed()).toBe('sweet-1');
    expect((await sweetloop(['study', 'arms', 'stop', 'duo', '--discard', 'starter'])).stderr).toContain(
      'Study "duo" compares no arms (starter 100% plays it).',
    );
  }, 120_000);

  it('the default study: the deployed version is the control, and after the stop it plays the deployed version again', async () => {
    const r = await sweetloop(['study', 'arms', 'start', 'default', '--candidate', 'sweet-2', '--share', '20']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('in study default: candidate sweet-2 vs control sweet-1, 20%');
    expect(await arms('default')).toEqual(['sweet-1 80', 'sweet-2 20']);
    const stop = await sweetloop(['study', 'arms', 'stop', 'default', '--discard', 'sweet-2']);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toContain('sweet-2 discarded; study default is now played by the deployed version');
    expect(await arms('default')).toEqual([]);
    expect(await deployed()).toBe('sweet-1');
  }, 120_000);
});
