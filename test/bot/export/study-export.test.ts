// `export --study NAME --format sweet-rl`: a study's complete k-blocks only (its k by default), the partial tasks
// counted and left out, sessions of other studies never in it, pairs formable on every task whose rewards differ,
// and a dataset card naming the study, its consent version and hash, arms, pay and dates. Real Postgres; sessions
// written through the stores as the engine writes them.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { runSweetloop } from '../../../testing/sweetloop-cli.ts';
import { exportSessions } from '../../../bot/export/export.ts';
import type { SweetRlTrajectory } from '../../../bot/export/sweet-rl.ts';
import { builtinTasks } from '../../../tasks/library.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import { acceptConsent } from '../../../prisma/participant-store.ts';
import { appendAgentTurn, appendHumanTurn, createSession } from '../../../prisma/session-store.ts';
import { recordEvaluation } from '../../../prisma/evaluation-store.ts';
import { consentSha256, createStudy, defaultStudy, type StudyWithArms } from '../../../prisma/study-store.ts';

const SALT = 'study-export-salt';
const CONSENT = 'We record your messages for the study.';
let t: TestDatabase;
let dir: string;
let study: StudyWithArms;
let pool: string[];

/** One answered, evaluated session of `person` on `taskId` in `studyId`, scored `score`. */
async function played(
  studyId: string,
  taskId: string,
  person: string,
  policyVersionId: string,
  score: number,
): Promise<void> {
  const p = await acceptConsent(t.prisma, person, person);
  const s = await createSession(t.prisma, {
    taskId,
    participantId: p.id,
    policyVersionId,
    channel: 'discord',
    simulated: false,
    studyId,
  });
  await appendAgentTurn(t.prisma, s.id, { content: 'Which cases matter?', rawOutput: 'Which cases matter?' });
  await appendHumanTurn(t.prisma, s.id, { content: 'The usual ones.' });
  const answer = 'def f():\n    return 1';
  await appendAgentTurn(
    t.prisma,
    s.id,
    { content: `I WANT TO ANSWER:\n${answer}`, rawOutput: `I WANT TO ANSWER:\n${answer}` },
    { answer, endReason: 'answered' },
  );
  await recordEvaluation(
    t.prisma,
    s.id,
    {
      score,
      success: score === 1,
      testsPassed: Math.round(score * 10),
      testsTotal: 10,
      detail: {},
      evaluatorVersion: 'test',
    },
    0,
  );
}

beforeAll(async () => {
  t = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'sweetloop-study-export-'));
  await importTasks(t.prisma, builtinTasks({ kind: 'backend', split: 'train' }).slice(0, 4));
  const [a, b] = await Promise.all(
    ['arm-a', 'arm-b'].map((name) =>
      t.prisma.policyVersion.create({
        data: { name, algorithm: 'external', checkpointPath: '/x', checkpointSha256: '0' },
      }),
    ),
  );
  const ids = (await t.prisma.task.findMany({ select: { id: true } })).map((x) => x.id);
  study = await createStudy(
    t.prisma,
    'cli',
    {
      name: 'pilot',
      kind: 'backend',
      split: 'train',
      perTask: 3,
      seed: 9,
      taskIds: ids,
      arms: [
        { policyVersionId: a!.id, share: 50 },
        { policyVersionId: b!.id, share: 50 },
      ],
      consentText: CONSENT,
      payPerSessionCents: 250,
      bonusSuccessCents: 100,
      currency: 'EUR',
      maxSessionsPerPerson: null,
      opensAt: new Date('2026-11-01T00:00:00Z'),
      closesAt: null,
      guildIds: [],
      channelIds: [],
    },
    { requireConsent: true },
  );
  pool = (await t.prisma.studyTask.findMany({ where: { studyId: study.id }, orderBy: { position: 'asc' } })).map(
    (x) => x.taskId,
  );
  // Task 0 complete with rewards that differ, task 1 complete with equal rewards, task 2 partial, task 3 untouched.
  for (const [task, rewards] of [
    [0, [1, 0, 0.5]],
    [1, [0.4, 0.4, 0.4]],
    [2, [1, 0]],
  ] as const) {
    for (const [i, r] of rewards.entries())
      await played(study.id, pool[task]!, `${900000000000000000 + task * 10 + i}`, i % 2 ? b!.id : a!.id, r);
  }
  // A session of the same task in the default study is not the study's.
  await played((await defaultStudy(t.prisma)).id, pool[0]!, '999999999999999999', a!.id, 0.7);
}, 120_000);

afterAll(async () => {
  await t?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const readJsonl = (path: string): SweetRlTrajectory[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as SweetRlTrajectory);

describe("a study's sweet-rl export", () => {
  it('writes its complete k-blocks only, counts the partial tasks, and names the study and its consent in the card', async () => {
    const path = join(dir, 'pilot.jsonl');
    const r = await exportSessions(t.prisma, { format: 'sweet-rl', salt: SALT, study: 'pilot' }, path);
    const rows = readJsonl(path);
    expect(rows).toHaveLength(6);
    expect(r.study).toMatchObject({ name: 'pilot', perTask: 3, consentVersion: 1, partialTasksLeftOut: 1 });
    // evaluate_code.py's reading with k = 3: line i, i + n and i + 2n are one task (n tasks per block).
    const k = 3;
    const n = rows.length / k;
    const tasks = await t.prisma.task.findMany({ where: { id: { in: pool } } });
    const taskOf = (x: SweetRlTrajectory) =>
      pool.indexOf(tasks.find((y) => y.description === x.task.problem_description)!.id);
    for (let i = 0; i < n; i++) expect(new Set([0, 1, 2].map((b) => taskOf(rows[i + b * n]!))).size).toBe(1);
    // Its pairs (chosen strictly better than rejected, within a task): formed on task 0, whose rewards differ, only.
    const rewards = (task: number) =>
      rows
        .filter((x) => taskOf(x) === task)
        .map((x) => x.reward)
        .sort();
    expect(rewards(0)).toEqual([0, 0.5, 1]);
    expect(rewards(1)).toEqual([0.4, 0.4, 0.4]);
    const pairs = (rs: number[]) => rs.flatMap((a, i) => rs.slice(i + 1).filter((b) => b !== a)).length;
    expect([pairs(rewards(0)), pairs(rewards(1))]).toEqual([3, 0]);

    const card = readFileSync(r.cardPath!, 'utf8');
    expect(card).toContain('## Study');
    expect(card).toContain('- study: `pilot` (train split)');
    expect(card).toContain('- sessions a task (k): 3; tasks left out with fewer than k sessions: 1');
    expect(card).toContain(`- consent text: version 1 (current), sha256 \`${consentSha256(CONSENT)}\``);
    expect(card).toContain('- arms: arm-a 50%, arm-b 50%');
    expect(card).toContain('- pay: 2.50 EUR a session, bonus on success 1.00 EUR');
    expect(card).toContain('- opens: 2026-11-01T00:00:00.000Z; closes: when closed');
    expect(card).toContain('DATA=pilot.jsonl');
    expect(card).toContain('python "$SWEET_RL/scripts/evaluate_code.py" "$DATA" --k 3 ');
  });

  it('says so on the command line, and refuses a study that does not exist', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: t.url, EXPORT_SALT: SALT, LOG_LEVEL: 'warn' };
    delete env.DISCORD_TOKEN;
    const out = join(dir, 'cli.jsonl');
    const ok = await runSweetloop(['export', '--study', 'pilot', '--format', 'sweet-rl', '--out', out], {
      env,
      timeoutMs: 120_000,
    });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`exported 6 sessions`);
    expect(ok.stdout).toContain(
      'study pilot (consent version 1): 1 partial task(s) with fewer than 3 sessions left out',
    );
    const missing = await runSweetloop(
      ['export', '--study', 'nope', '--format', 'sweet-rl', '--out', join(dir, 'x.jsonl')],
      { env, timeoutMs: 120_000 },
    );
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no study named "nope"/);
  });
});
