// sweet-rl files back into the database (bot/export/import.ts): a Sweetloop export round-trips exactly, the
// official layout is read, bad lines are reported by number without costing good ones, and a repeat stores
// nothing. Two real Postgres databases: the one exported from, and a fresh one imported into.
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../testing/database.ts';
import { exportSessions, type ExportOptions } from '../../../bot/export/export.ts';
import { importSessions, IMPORTED_EVALUATOR_VERSION } from '../../../bot/export/import.ts';
import { resolveChatTemplate } from '../../../bot/export/chat-template.ts';
import { createScorer } from '../../../tasks/scorer.ts';
import { BACKEND_EVALUATOR_VERSION } from '../../../tasks/backend-eval.ts';
import { seedSimulatedWorld } from './simulated-world.ts';

let source: Awaited<ReturnType<typeof createTestDatabase>>;
let target: Awaited<ReturnType<typeof createTestDatabase>>;
let dir: string;

beforeAll(async () => {
  [source, target] = await Promise.all([createTestDatabase(), createTestDatabase()]);
  await seedSimulatedWorld(source.prisma);
  dir = await mkdtemp(join(tmpdir(), 'sweetloop-import-'));
});

afterAll(async () => {
  await Promise.all([source?.drop(), target?.drop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

const options: ExportOptions = {
  format: 'sweet-rl',
  salt: 'import-test-salt',
  filters: { kind: 'backend', source: 'simulated', perTask: 2 },
};
const lines = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean);
// The trajectory of a line without its session id: an imported session is a new session of this database.
const trajectory = (line: string) => {
  const { session_id: id, ...rest } = JSON.parse(line) as { session_id?: string };
  expect(typeof id).toBe('string');
  return rest;
};

describe('import-sessions', () => {
  it('importing an export and exporting it again gives the same trajectories', async () => {
    const first = join(dir, 'first.jsonl');
    await exportSessions(source.prisma, options, first);
    const r = await importSessions(target.prisma, first, { kind: 'backend' });
    expect(r).toMatchObject({ lines: 6, stored: 6, repeats: 0, tasksCreated: 3, invalid: [] });
    const second = join(dir, 'second.jsonl');
    await exportSessions(target.prisma, options, second);
    expect(lines(second).map(trajectory)).toEqual(lines(first).map(trajectory));

    // Stored as simulated sessions of the 'imported' channel, evaluated from the file's reward.
    const stored = await target.prisma.session.findMany({
      include: { evaluation: true, participant: true },
      orderBy: { startedAt: 'asc' },
    });
    expect(
      stored.map((s) => [s.channel, s.simulated, s.status, s.participant.role, s.participant.discordUserId]),
    ).toEqual(Array(6).fill(['imported', true, 'answered', 'simulated', 'sim:import:first.jsonl']));
    expect(stored.map((s) => s.evaluation!.evaluatorVersion)).toEqual(Array(6).fill(IMPORTED_EVALUATOR_VERSION));
    expect(stored.map((s) => s.reward)).toEqual(lines(first).map((l) => JSON.parse(l).reward));
    expect(stored.map((s) => [s.evaluation!.testsPassed, s.evaluation!.testsTotal])).toEqual([
      [3, 3],
      [3, 3],
      [1, 3],
      [0, 3],
      [2, 3],
      [3, 3],
    ]);
  });

  it('importing the same file twice stores nothing new; nor does importing it where it came from', async () => {
    const path = join(dir, 'first.jsonl');
    const again = await importSessions(target.prisma, path, { kind: 'backend', collaborator: 'someone-else' });
    expect(again).toMatchObject({ lines: 6, stored: 0, repeats: 6, tasksCreated: 0 });
    expect(await target.prisma.session.count()).toBe(6);
    // In the source database the trajectories are the very sessions they were exported from.
    const home = await importSessions(source.prisma, path, { kind: 'backend' });
    expect(home).toMatchObject({ stored: 0, repeats: 6, tasksCreated: 0 });
  });

  it("reads the official rollouts' layout and reports bad lines by number, storing the good ones", async () => {
    const template = resolveChatTemplate('llama3').formatter;
    const task = {
      problem_description: 'Make g. The signature of the function is: def g(a, b)',
      ground_truth: 'def g(a, b):\n    return a * b\n',
      test_cases: { test1: 'g(1, 2)', test2: 'g(3, 4)' },
    };
    const entry = (content: string) => ({
      role: 'assistant',
      content,
      input: template.format([{ role: 'user', content: task.problem_description }], { addGenerationPrompt: true }),
      output: content,
    });
    const official = {
      task: { ...task, hidden_information: task.ground_truth },
      dialogue_history: [
        { role: 'user', content: task.problem_description },
        entry('Multiply or add?'),
        { role: 'user', content: 'Multiply.' },
        entry('I WANT TO ANSWER:\ndef g(a, b):\n    return a * b'),
      ],
      // Official answers keep what followed the marker, whitespace included.
      answer: '\ndef g(a, b):\n    return a * b',
      reward: 0.5,
    };
    const bad = [
      '{not json',
      JSON.stringify({ ...official, reward: undefined }),
      JSON.stringify({ ...official, dialogue_history: official.dialogue_history.slice(0, 3) }),
      JSON.stringify({ ...official, dialogue_history: [official.dialogue_history[1], official.dialogue_history[0]] }),
      JSON.stringify({ ...official, task: { problem_description: 'x', ground_truth: 'y' } }),
      '',
    ];
    const path = join(dir, 'official.jsonl');
    writeFileSync(path, [JSON.stringify(official), ...bad].join('\n') + '\n');
    const r = await importSessions(target.prisma, path, { kind: 'backend', collaborator: 'llama-3.1-70b' });
    expect(r.stored).toBe(1);
    expect(r.invalid.map((e) => e.line)).toEqual([2, 3, 4, 5, 6, 7]);
    expect(r.invalid[0]!.reason).toMatch(/not valid JSON/);
    expect(r.invalid[1]!.reason).toMatch(/reward: missing/);
    expect(r.invalid[2]!.reason).toMatch(/must end on an assistant entry/);
    expect(r.invalid[3]!.reason).toMatch(/dialogue_history\[0\]/);
    expect(r.invalid[4]!.reason).toMatch(/task: test_cases: missing/);
    expect(r.invalid[5]!.reason).toMatch(/empty line/);
    const s = await target.prisma.session.findUniqueOrThrow({
      where: { id: r.sessionIds[0]! },
      include: { turns: { orderBy: { index: 'asc' } }, evaluation: true, task: true },
    });
    expect(s.answer).toBe(official.answer);
    expect(s.turns.map((x) => [x.role, x.content])).toEqual([
      ['agent', 'Multiply or add?'],
      ['human', 'Multiply.'],
      ['agent', 'I WANT TO ANSWER:\ndef g(a, b):\n    return a * b'],
    ]);
    expect(s.evaluation).toMatchObject({ score: 0.5, testsPassed: 1, testsTotal: 2, evaluatorVersion: 'imported' });
    expect(s.task).toMatchObject({ kind: 'backend', source: 'colbench', testCases: ['g(1, 2)', 'g(3, 4)'] });
    expect(s.endReason).toBe('answered');
    // --rescore: the answer is scored by our own sandboxed evaluator instead (the task is already stored).
    const rescorePath = join(dir, 'official-rescore.jsonl');
    writeFileSync(
      rescorePath,
      JSON.stringify({
        ...official,
        reward: undefined,
        dialogue_history: [
          ...official.dialogue_history.slice(0, 3),
          entry('I WANT TO ANSWER: def g(a, b): return a + b'),
        ],
        answer: ' def g(a, b): return a + b',
      }) + '\n',
    );
    const scorer = createScorer();
    try {
      const rescored = await importSessions(target.prisma, rescorePath, { kind: 'backend', scorer });
      expect(rescored).toMatchObject({ stored: 1, tasksCreated: 0, invalid: [] });
      const e = await target.prisma.evaluation.findUniqueOrThrow({ where: { sessionId: rescored.sessionIds[0]! } });
      // g(1, 2): 3 vs 2; g(3, 4): 7 vs 12.
      expect(e).toMatchObject({ score: 0, testsPassed: 0, testsTotal: 2, evaluatorVersion: BACKEND_EVALUATOR_VERSION });
    } finally {
      await scorer.close();
    }
    // --kind decides how the task is read: a backend line under --kind frontend is refused, not stored.
    const wrongKind = await importSessions(target.prisma, path, { kind: 'frontend' });
    expect(wrongKind.stored).toBe(0);
    expect(wrongKind.invalid[0]).toMatchObject({ line: 1, reason: expect.stringMatching(/--kind is frontend/) });
  });

  it('a frontend export round-trips too (the screenshot is named by the page, so the answer path is the same)', async () => {
    const opts: ExportOptions = {
      format: 'sweet-rl',
      salt: 'import-test-salt',
      filters: { kind: 'frontend', source: 'simulated' },
    };
    const first = join(dir, 'front-first.jsonl');
    await exportSessions(source.prisma, opts, first);
    const r = await importSessions(target.prisma, first, { kind: 'frontend' });
    expect(r).toMatchObject({ stored: 1, invalid: [] });
    const second = join(dir, 'front-second.jsonl');
    await exportSessions(target.prisma, opts, second);
    expect(lines(second).map((l) => ({ ...trajectory(l), answer: undefined }))).toEqual(
      lines(first).map((l) => ({ ...trajectory(l), answer: undefined })),
    );
    expect(JSON.parse(lines(second)[0]!).answer.replace('front-second', 'front-first')).toBe(
      JSON.parse(lines(first)[0]!).answer,
    );
  }, 60_000);

  it('a frontend line: the page comes from the last assistant entry, not the screenshot path', async () => {
    const page = '<html><body><p class="text-xl">Hi</p></body></html>';
    const line = {
      task: { problem_description: 'A greeting page.', ground_truth: '<html><body><p>Hello</p></body></html>' },
      dialogue_history: [
        { role: 'user', content: 'A greeting page.' },
        { role: 'assistant', content: page, input: 'x', output: `OUTPUT: ${page}` },
      ],
      answer: '/fsx/somewhere/0_1712.png',
      reward: 0.7,
    };
    const path = join(dir, 'front.jsonl');
    writeFileSync(path, JSON.stringify(line) + '\n');
    const r = await importSessions(target.prisma, path, { kind: 'frontend' });
    expect(r.stored).toBe(1);
    const s = await target.prisma.session.findUniqueOrThrow({
      where: { id: r.sessionIds[0]! },
      include: { turns: true, evaluation: true },
    });
    expect(s.answer).toBe(page);
    expect(s.turns[0]).toMatchObject({ content: page, rawOutput: `OUTPUT: ${page}` });
    expect(s.evaluation).toMatchObject({ score: 0.7, success: false, testsPassed: null, evaluatorVersion: 'imported' });
    expect(s.endReason).toBe('turn-limit');
  });
});
