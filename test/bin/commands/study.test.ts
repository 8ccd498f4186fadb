// `sweetloop study create|list|show|pause|resume|close|consent|payouts` end to end: the real binary and a real
// database. A study is stored with its pool, arms, consent version and rules; bad input gets a clear error and
// creates nothing; `show` counts complete, partial and untouched tasks, sessions per arm, people active, critic
// pairs, the median active time and the projected completion; `payouts` pays each person answered sessions x pay
// + successes x bonus, a person who deleted their data under their keyed hash, and refuses without --include-ids.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { runSweetloop, type SweetloopRun } from '../../../testing/sweetloop-cli.ts';
import { builtinTasks } from '../../../tasks/library.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import { consentSha256, createStudy } from '../../../prisma/study-store.ts';
import { deletePerson, erasedId } from '../../../bot/privacy.ts';

let t: TestDatabase;
let dir: string;
let tasks: { id: string; externalId: string | null }[];

function sweetloop(args: string[], env: Record<string, string> = {}): Promise<SweetloopRun> {
  const { DISCORD_TOKEN: _token, ...rest } = process.env;
  return runSweetloop(args, { env: { ...rest, LOG_LEVEL: 'warn', DATABASE_URL: t.url, ...env }, timeoutMs: 120_000 });
}

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

beforeAll(async () => {
  t = await createTestDatabase();
  dir = mkdtempSync(join(tmpdir(), 'sweetloop-study-cli-'));
  await importTasks(t.prisma, builtinTasks({ kind: 'backend', split: 'train' }).slice(0, 10));
  tasks = await t.prisma.task.findMany({ orderBy: { externalId: 'asc' }, select: { id: true, externalId: true } });
  await t.prisma.policyVersion.create({
    data: {
      name: 'starter',
      algorithm: 'starter',
      checkpointPath: '/c',
      checkpointSha256: 'x',
      status: 'deployed',
      deployedAt: new Date(),
    },
  });
  await t.prisma.policyVersion.create({
    data: { name: 'sweet-1', algorithm: 'sweet', checkpointPath: '/s', checkpointSha256: 'y' },
  });
}, 120_000);

afterAll(async () => {
  await t?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('sweetloop study', () => {
  it('creates a study from a file of task ids with arms, consent, pay, dates and bindings, and shows it', async () => {
    const ids = file(
      'pool.txt',
      `# six tasks\n${tasks
        .slice(0, 3)
        .map((x) => x.id)
        .join('\n')}\n\n${tasks
        .slice(3, 6)
        .map((x) => x.externalId)
        .join('\n')}\n`,
    );
    const consent = file('consent.md', 'We record your messages for research.');
    const create = await sweetloop([
      'study',
      'create',
      'pilot',
      '--tasks',
      ids,
      '--per-task',
      '3',
      '--arm',
      'starter:50',
      '--arm',
      'sweet-1:50',
      '--seed',
      '11',
      '--consent-file',
      consent,
      '--pay-per-session',
      '2.50',
      '--bonus-success',
      '1',
      '--currency',
      'eur',
      '--max-sessions-per-person',
      '4',
      '--opens',
      '2026-01-01',
      '--closes',
      '2030-01-01',
      '--guild',
      '123456789012345678',
      '--channel',
      '223456789012345678',
    ]);
    expect(create.code, create.stderr).toBe(0);
    expect(create.stdout).toContain(
      `created study pilot: 6 task(s), k = 3, arms starter 50%, sweet-1 50%, consent version 1 (sha256 ${consentSha256('We record your messages for research.').slice(0, 12)}…), seed 11`,
    );
    const s = await t.prisma.study.findUniqueOrThrow({ where: { name: 'pilot' }, include: { tasks: true } });
    expect(s).toMatchObject({
      perTask: 3,
      seed: 11,
      split: 'train',
      payPerSessionCents: 250,
      bonusSuccessCents: 100,
      currency: 'EUR',
      maxSessionsPerPerson: 4,
      guildIds: ['123456789012345678'],
      channelIds: ['223456789012345678'],
      consentVersion: 1,
    });
    expect(s.opensAt!.toISOString()).toBe('2026-01-01T00:00:00.000Z');
    expect(new Set(s.tasks.map((x) => x.taskId))).toEqual(new Set(tasks.slice(0, 6).map((x) => x.id)));

    const show = await sweetloop(['study', 'show', 'pilot']);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain('study pilot (open)');
    expect(show.stdout).toContain('tasks: 6 backend/frontend (train split), k = 3 sessions a task, seed 11');
    expect(show.stdout).toContain('pay: 2.50 EUR a session, +1.00 EUR on success; at most 4 session(s) a person');
    expect(show.stdout).toContain('progress: 0 task(s) complete, 0 partial, 6 untouched');
  });

  it('draws a seeded sample of a kind, plays the deployed version by default, and lists the studies', async () => {
    for (const name of ['sample-a', 'sample-b']) {
      const r = await sweetloop([
        'study',
        'create',
        name,
        '--kind',
        'backend',
        '--sample',
        '4',
        '--seed',
        '5',
        '--per-task',
        '2',
      ]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(
        `created study ${name}: 4 task(s), k = 2, arms starter 100%, no consent text of its own, seed 5`,
      );
    }
    const pool = async (name: string) =>
      (await t.prisma.studyTask.findMany({ where: { study: { name } }, orderBy: { position: 'asc' } })).map(
        (x) => x.taskId,
      );
    expect(await pool('sample-a')).toEqual(await pool('sample-b'));
    const list = await sweetloop(['study', 'list']);
    expect(list.code, list.stderr).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^name\s+status\s+k\s+tasks\s+complete\s+partial\s+untouched\s+answered\s+active$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 4).join(' '))).toEqual([
      'pilot open 3 6',
      'sample-a open 2 4',
      'sample-b open 2 4',
    ]);
  });

  it('refuses bad input with a clear error and creates nothing', async () => {
    const before = await t.prisma.study.count();
    const pool = file(
      'ok.txt',
      tasks
        .slice(0, 2)
        .map((x) => x.id)
        .join('\n'),
    );
    const cases: [string[], RegExp, Record<string, string>?][] = [
      [
        ['--tasks', file('bad.txt', `${tasks[0]!.id}\nno-such-task\n`), '--per-task', '2'],
        /Unknown task id\(s\): no-such-task/,
      ],
      [['--tasks', pool, '--per-task', '0'], /Sessions per task \(k\) must be a whole number of at least 1, got 0/],
      [
        ['--tasks', pool, '--per-task', '2', '--arm', 'starter:60', '--arm', 'sweet-1:30'],
        /shares must sum to 100, they sum to 90/,
      ],
      [
        ['--tasks', pool, '--per-task', '2', '--opens', '2027-02-01', '--closes', '2027-01-01'],
        /closes \(2027-01-01T00:00:00.000Z\) before it opens/,
      ],
      [
        ['--tasks', pool, '--per-task', '2', '--consent-file', join(dir, 'missing.md')],
        /--consent-file .*missing\.md: no such file/,
      ],
      [['--tasks', pool, '--per-task', '2', '--arm', 'nobody:100'], /No policy version named "nobody"/],
      [['--tasks', pool, '--per-task', '2'], /needs a consent text/, { DISCORD_TOKEN: 'fake-token-for-the-test' }],
      [['--per-task', '2'], /Give the study its tasks/],
    ];
    for (const [args, message, env] of cases) {
      const r = await sweetloop(['study', 'create', 'fresh', ...args], env);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
    const dup = await sweetloop(['study', 'create', 'pilot', '--tasks', pool, '--per-task', '2']);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/A study named "pilot" exists already/);
    expect(await t.prisma.study.count()).toBe(before);
  });

  it('counts complete, partial and untouched tasks, sessions per arm, people active and critic pairs', async () => {
    const s = await t.prisma.study.findUniqueOrThrow({
      where: { name: 'pilot' },
      include: { tasks: { orderBy: { position: 'asc' } }, arms: { include: { policyVersion: true } } },
    });
    const [starter, sweet] = ['starter', 'sweet-1'].map(
      (n) => s.arms.find((a) => a.policyVersion.name === n)!.policyVersionId,
    );
    const people: string[] = [];
    for (let i = 0; i < 4; i++)
      people.push(
        (
          await t.prisma.participant.create({
            data: { discordUserId: `40000000000000000${i}`, consentGivenAt: new Date() },
          })
        ).id,
      );
    const plant = (
      task: number,
      who: number,
      policy: string,
      status: 'answered' | 'active' | 'abandoned',
      reward: number | null,
    ) =>
      t.prisma.session.create({
        data: {
          studyId: s.id,
          taskId: s.tasks[task]!.taskId,
          participantId: people[who]!,
          policyVersionId: policy,
          channel: 'discord',
          status,
          reward,
        },
      });
    // Task 0 complete with rewards 1, 0, 1 (one critic pair: a best against the 0); task 1 complete with 0.5 x 3 (none); task 2 partial
    // (one answered, one active); an abandoned session holds nothing.
    for (const [who, policy, reward] of [
      [0, starter, 1],
      [1, sweet, 0],
      [2, starter, 1],
    ] as const)
      await plant(0, who, policy!, 'answered', reward);
    for (const [who, policy] of [
      [0, sweet],
      [1, starter],
      [2, sweet],
    ] as const)
      await plant(1, who, policy!, 'answered', 0.5);
    await plant(2, 3, starter!, 'answered', 0.2);
    await plant(2, 0, sweet!, 'active', null);
    await plant(3, 1, sweet!, 'abandoned', null);
    const show = await sweetloop(['study', 'show', 'pilot']);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(
      'progress: 2 task(s) complete, 1 partial, 3 untouched; 7 answered, 1 active session(s)',
    );
    expect(show.stdout).toContain('arm starter (50%): 4 answered, 0 active');
    expect(show.stdout).toContain('arm sweet-1 (50%): 3 answered, 1 active');
    expect(show.stdout).toContain('people active now: 1');
    expect(show.stdout).toContain('critic pairs available: 1');
    const json = JSON.parse((await sweetloop(['study', 'show', 'pilot', '--json'])).stdout);
    expect(json).toMatchObject({
      complete: 2,
      partial: 1,
      untouched: 3,
      criticPairs: 1,
      peopleActive: 1,
      consentVersion: 1,
    });
  });

  it('pauses, resumes and closes a study for good, and versions a new consent text', async () => {
    for (const [verb, state] of [
      ['pause', 'paused'],
      ['resume', 'open'],
      ['close', 'closed'],
    ] as const) {
      const r = await sweetloop(['study', verb, 'sample-a']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe(`study sample-a is ${state}`);
    }
    const again = await sweetloop(['study', 'resume', 'sample-a']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/closed; a closed study does not open again/);
    const noConsent = await sweetloop(['study', 'resume', 'sample-b'], { DISCORD_TOKEN: 'fake-token-for-the-test' });
    expect(noConsent.code).toBe(0); // already open: nothing to do
    await sweetloop(['study', 'pause', 'sample-b']);
    const refused = await sweetloop(['study', 'resume', 'sample-b'], { DISCORD_TOKEN: 'fake-token-for-the-test' });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /has no consent text; set one with `sweetloop study consent sample-b --consent-file FILE`/,
    );
    const v2 = await sweetloop([
      'study',
      'consent',
      'pilot',
      '--consent-file',
      file('consent-2.md', 'We record your messages and ratings.'),
    ]);
    expect(v2.code, v2.stderr).toBe(0);
    expect(v2.stdout.trim()).toBe(
      `study pilot: consent version 2 (sha256 ${consentSha256('We record your messages and ratings.')})`,
    );
    const audit = (
      await t.prisma.auditLog.findMany({ where: { target: 'sample-a' }, orderBy: { createdAt: 'asc' } })
    ).map((a) => a.action);
    expect(audit).toEqual(['study.create', 'study.pause', 'study.resume', 'study.close']);
  });
});

describe('sweetloop study payouts', () => {
  const key = 'study-payouts-test-key';
  const [alice, bob, erin] = ['500000000000000001', '500000000000000002', '500000000000000003'];
  const SECRET = 'Erin wrote this sentence in her session.';
  const min = 60_000;

  beforeAll(async () => {
    const starter = await t.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'starter' } });
    const study = await createStudy(
      t.prisma,
      'cli',
      {
        name: 'paid',
        kind: 'backend',
        split: 'train',
        perTask: 2,
        seed: 3,
        taskIds: tasks.slice(6, 10).map((x) => x.id),
        arms: [{ policyVersionId: starter.id, share: 100 }],
        consentText: 'We pay you.',
        payPerSessionCents: 250,
        bonusSuccessCents: 100,
        currency: 'EUR',
        maxSessionsPerPerson: null,
        opensAt: null,
        closesAt: null,
        guildIds: [],
        channelIds: [],
      },
      { requireConsent: false },
    );
    const t0 = Date.now() - 10 * 3600_000;
    const ids = new Map<string, string>();
    for (const who of [alice, bob, erin])
      ids.set(
        who,
        (await t.prisma.participant.create({ data: { discordUserId: who, consentGivenAt: new Date() } })).id,
      );
    // A session whose start and messages happen at `moments` (minutes after t0); the last one ends it.
    const plant = async (
      who: string,
      task: number,
      status: 'answered' | 'abandoned',
      success: boolean | null,
      moments: number[],
    ) => {
      const at = (m: number) => new Date(t0 + m * min);
      const s = await t.prisma.session.create({
        data: {
          studyId: study.id,
          taskId: tasks[task]!.id,
          participantId: ids.get(who)!,
          policyVersionId: starter.id,
          channel: 'discord',
          status,
          startedAt: at(moments[0]!),
          endedAt: at(moments.at(-1)!),
          turnCount: 2,
        },
      });
      for (const [index, m] of moments.slice(1).entries()) {
        await t.prisma.turn.create({
          data: {
            sessionId: s.id,
            index,
            role: index % 2 ? 'human' : 'agent',
            content: who === erin ? SECRET : 'Fine.',
            createdAt: at(m),
          },
        });
      }
      if (success !== null)
        await t.prisma.evaluation.create({
          data: { sessionId: s.id, score: success ? 1 : 0, success, detail: {}, evaluatorVersion: 'test' },
        });
    };
    // Active minutes: gaps of at most 5 minutes between consecutive moments.
    await plant(alice, 6, 'answered', true, [0, 1, 2, 3]); // 3
    await plant(alice, 7, 'answered', false, [20, 22, 32, 33]); // 2 + 1 (the 10-minute pause left out)
    await plant(alice, 8, 'abandoned', null, [40, 41]); // not paid
    await plant(bob, 6, 'answered', true, [0, 4, 10, 11]); // 4 + 1
    await plant(erin, 7, 'answered', true, [0, 1, 2]); // 2
    await plant(erin, 8, 'answered', false, [10, 13, 14]); // 4
    const receipt = await deletePerson(t.prisma, erin, { key });
    expect(receipt).toMatchObject({ sessions: 2, paySessionsKept: 2 });
  });

  it('refuses without --include-ids, saying why, and writes nothing', async () => {
    const out = join(dir, 'refused.csv');
    const r = await sweetloop(['study', 'payouts', 'paid', '--out', out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /names each person by their platform \(Discord or Prolific\) id, which is personal data: run it again with --include-ids/,
    );
    expect(existsSync(out)).toBe(false);
    expect(await t.prisma.auditLog.count({ where: { action: 'study.payouts' } })).toBe(0);
    const unpaid = await sweetloop(['study', 'payouts', 'sample-b', '--out', out, '--include-ids']);
    expect(unpaid.code).toBe(1);
    expect(unpaid.stderr).toMatch(/Study "sample-b" has no pay rules/);
  });

  it('writes one line per person whose amounts are answered sessions x pay + successes x bonus, the erased person under the hash', async () => {
    const out = join(dir, 'payouts.csv');
    const r = await sweetloop(['study', 'payouts', 'paid', '--out', out, '--include-ids']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(`wrote ${out}: 3 person(s), 5 answered session(s), 15.50 EUR in all`);
    const text = readFileSync(out, 'utf8');
    expect(text).toBe(
      [
        'platform_id,sessions,active_minutes,amount,currency',
        `${alice},2,6.0,6.00,EUR`,
        `${bob},1,5.0,3.50,EUR`,
        `${erasedId(key, erin)},2,6.0,6.00,EUR`,
        '',
      ].join('\n'),
    );
    // The total is the rules applied to the planted sessions: 5 answered x 2.50 + 3 successes x 1.00.
    const total = text
      .trim()
      .split('\n')
      .slice(1)
      .reduce((a, line) => a + Math.round(Number(line.split(',')[3]) * 100), 0);
    expect(total).toBe(5 * 250 + 3 * 100);
    // The erased person is named by the hash only, and nothing they wrote survives anywhere.
    expect(text).not.toContain(erin);
    expect(await t.prisma.turn.count({ where: { content: SECRET } })).toBe(0);
    const kept = await t.prisma.erasedStudySession.findMany();
    expect(kept.map((k) => k.participantKey)).toEqual([erasedId(key, erin), erasedId(key, erin)]);
    expect(JSON.stringify(kept)).not.toContain(erin);
    const audit = await t.prisma.auditLog.findFirstOrThrow({ where: { action: 'study.payouts' } });
    expect(audit).toMatchObject({
      actor: 'cli',
      target: 'paid',
      detail: { people: 3, erasedPeople: 1, sessions: 5, totalCents: 1550, currency: 'EUR', file: out },
    });
  });

  it('shows the median active time of answered sessions and the projected completion', async () => {
    const show = await sweetloop(['study', 'show', 'paid']);
    expect(show.code, show.stderr).toBe(0);
    // Alice's 3 and 3 minutes and Bob's 5 (Erin's sessions were deleted with her data).
    expect(show.stdout).toContain('median active time of answered sessions: 3.0 min (pauses over 5 min left out)');
    // 4 tasks x k 2 - 3 answered = 5 slots, at the 3 answered in the last 24 h: 5/3 days from now.
    const m =
      /projected completion: (\d{4}-\d\d-\d\d \d\d:\d\d) UTC \(5 slot\(s\) left at 3\.0 answered a day, over the last 24 h\)/.exec(
        show.stdout,
      );
    expect(m, show.stdout).not.toBeNull();
    const at = new Date(`${m![1]!.replace(' ', 'T')}Z`).getTime();
    expect(Math.abs(at - (Date.now() + (5 / 3) * 24 * 3600_000))).toBeLessThan(5 * min);
    const fresh = await sweetloop(['study', 'show', 'sample-b']);
    expect(fresh.stdout).toContain('median active time of answered sessions: — (none answered yet)');
    expect(fresh.stdout).toContain(
      'projected completion: not enough data yet (8 slot(s) left; fewer than 3 sessions answered)',
    );
  });
});
