// `sweetloop study calibrate` end to end: the real binary and a real Postgres database hold a study with people's
// answered sessions on two arms (endpoint versions on a real HTTP server standing in for the model); the rule-based
// simulator (and the LLM one, on a second such server) plays the same tasks with the same versions, and the command
// prints a row for every metric with finite values paired on every task, one JSON line, and with --out the report
// and its PNG drawn by the real Chromium.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { startOpenAiServer, type ChatBody, type OpenAiServer } from '../../../testing/openai-server.ts';
import { runSweetloop } from '../../../testing/sweetloop-cli.ts';
import { calibrationSvg } from '../../../bot/report/calibration-report.ts';
import { planGames, type CalibrationResult } from '../../../bot/report/calibration.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import { METRICS } from '../../../tasks/calibration.ts';
import { generateMiniTasks } from '../../../tasks/mini.ts';
import type { TaskRecord } from '../../../tasks/model.ts';
import { registerEndpointVersion } from '../../../trainer/policies/registry.ts';

let t: TestDatabase;
let server: OpenAiServer;
let dir: string;
let records: TaskRecord[];

// Asks about the hidden values once, then answers with a function whose signature it copies from the task.
function player(body: ChatBody): string {
  if (!body.messages.some((m) => m.role === 'assistant'))
    return 'What exact values, limits and labels should the function use?';
  const signature = /def \w+\([^)]*\)/.exec(String(body.messages[1]!.content))?.[0] ?? 'def f()';
  return `I WANT TO ANSWER: ${signature}:\n    return None`;
}

describe('planning the games', () => {
  it("gives each task k games, played by its people's versions in turn", () => {
    const sessions = [
      { taskId: 'T1', policyVersionId: 'a' },
      { taskId: 'T2', policyVersionId: 'b' },
      { taskId: 'T1', policyVersionId: 'b' },
    ];
    expect(planGames(sessions, 3)).toEqual([
      { policyVersionId: 'a', taskIds: ['T1', 'T1'] },
      { policyVersionId: 'b', taskIds: ['T1', 'T2', 'T2', 'T2'] },
    ]);
    expect(() => planGames(sessions, 0)).toThrow(/at least 1/);
  });
});

describe('sweetloop study calibrate', () => {
  beforeAll(async () => {
    t = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), 'sweetloop-calibrate-'));
    records = generateMiniTasks({ seed: 8, count: 3, split: 'train' });
    await importTasks(t.prisma, records);
    server = await startOpenAiServer({ model: 'llama-test', maxModelLen: 8192, reply: player, tokenDelayMs: 0 });
    await registerEndpointVersion(t.prisma, { name: 'llama-a', url: server.url, model: 'llama-test', maxTokens: 200 });
    await registerEndpointVersion(t.prisma, { name: 'llama-b', url: server.url, model: 'llama-test', maxTokens: 150 });
  }, 180_000);

  afterAll(async () => {
    await server?.close();
    await t?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const sweetloop = (args: string[], env: Record<string, string> = {}) => {
    const { DISCORD_TOKEN: _token, SIMULATOR_LLM_URL: _url, ...rest } = process.env;
    return runSweetloop(args, {
      env: { ...rest, LOG_LEVEL: 'warn', DATABASE_URL: t.url, CHECKPOINT_DIR: join(dir, 'checkpoints'), ...env },
      timeoutMs: 240_000,
    });
  };

  it('prints people against the simulator for every metric, paired on every task, and writes the PNG', async () => {
    const tasks = await t.prisma.task.findMany({ select: { id: true, externalId: true } });
    const idOf = new Map(tasks.map((x) => [x.externalId!, x.id]));
    const pool = join(dir, 'pool.txt');
    writeFileSync(pool, records.map((r) => r.externalId).join('\n'));
    const create = await sweetloop([
      'study',
      'create',
      'cal',
      '--tasks',
      pool,
      '--per-task',
      '2',
      '--arm',
      'llama-a:50',
      '--arm',
      'llama-b:50',
      '--seed',
      '3',
    ]);
    expect(create.code, create.stderr).toBe(0);

    // Each task: a person on llama-a who gave a withheld value and succeeded, then one on llama-b who did not know
    // and failed (on the last task, pasted the reference instead).
    const study = await t.prisma.study.findUniqueOrThrow({
      where: { name: 'cal' },
      include: { arms: { include: { policyVersion: true } } },
    });
    const arm = (name: string) => study.arms.find((a) => a.policyVersion.name === name)!.policyVersionId;
    const t0 = Date.now() - 3_600_000;
    let n = 0;
    const plant = async (r: TaskRecord, policy: string, reply: string, score: number) => {
      const k = n++;
      const p = await t.prisma.participant.create({
        data: { discordUserId: `50000000000000000${k}`, consentGivenAt: new Date() },
      });
      const at = (s: number) => new Date(t0 + k * 600_000 + s * 1000);
      await t.prisma.session.create({
        data: {
          studyId: study.id,
          taskId: idOf.get(r.externalId)!,
          participantId: p.id,
          policyVersionId: policy,
          channel: 'discord',
          status: 'answered',
          startedAt: at(0),
          endedAt: at(90),
          reward: score,
          turnCount: 2,
          answer: 'def f(): pass',
          turns: {
            create: [
              { index: 0, role: 'agent', content: 'Which values should I use?', createdAt: at(1) },
              { index: 1, role: 'human', content: reply, createdAt: at(30) },
              { index: 2, role: 'agent', content: 'I WANT TO ANSWER: def f(): pass', createdAt: at(60) },
            ],
          },
          evaluation: { create: { score, success: score === 1, detail: {}, evaluatorVersion: 'test' } },
        },
      });
    };
    for (const [i, r] of records.entries()) {
      const withheld = (r.meta!.withheld as { answer: string }[])[0]!;
      await plant(r, arm('llama-a'), `Use ${withheld.answer}.`, 1);
      await plant(r, arm('llama-b'), i === 2 ? `Here is mine:\n${r.reference}` : "I don't know.", 0.5);
    }

    const out = join(dir, 'report');
    const run = await sweetloop(['study', 'calibrate', 'cal', '--simulator', 'builtin', '--out', out]);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toContain(
      'study cal: people (6 sessions) against rule-simulator (6 games, 2 a task; llama-a 3, llama-b 3) on 3 task(s), paired by task',
    );
    expect(lines[1]).toMatch(/^metric\s+people\s+simulator\s+people - simulator \[95% CI\]\s+tasks$/);
    for (const [i, m] of METRICS.entries()) {
      // Every row: both means and the difference with its interval, on all three tasks.
      expect(lines[2 + i]).toMatch(
        new RegExp(
          `^${m.label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s+-?[\\d.]+%?\\s+-?[\\d.]+%?\\s+[+-][\\d.]+%? \\[[+-][\\d.]+%?, [+-][\\d.]+%?\\]\\s+3$`,
        ),
      );
    }
    const result = JSON.parse(lines.at(-1)!) as CalibrationResult;
    expect(result).toMatchObject({
      study: 'cal',
      simulator: 'rule-simulator',
      gamesPerTask: 2,
      seed: 3,
      tasks: 3,
      peopleSessions: 6,
      games: 6,
    });
    // The leak rate, over every session of each side: one of people's six pasted the reference; the rule-based
    // simulator says facts, never code.
    expect(result.leak.people).toMatchObject({ sessions: 6, leaked: 1, rate: { estimate: 1 / 6 } });
    expect(result.leak.people.rate.lo).toBeGreaterThan(0);
    expect(result.leak.people.rate.hi).toBeLessThan(1);
    expect(result.leak.simulator).toMatchObject({ sessions: 6, leaked: 0, rate: { estimate: 0, lo: 0 } });
    expect(lines[2 + METRICS.length]).toMatch(
      /^leak rate \(sessions whose collaborator replies contain the reference's code\), 95% Wilson interval: people 16\.7% \[\d+\.\d%, \d+\.\d%\] \(1 of 6 sessions\); simulator 0\.0% \[0\.0%, \d+\.\d%\] \(0 of 6 sessions\)$/,
    );
    // Kept for the dashboard's calibration page, as printed.
    const stored = await t.prisma.studyCalibration.findFirstOrThrow({ where: { study: { name: 'cal' } } });
    expect(stored.simulator).toBe('rule-simulator');
    expect(stored.result).toEqual(result);
    expect(result.rows.map((r) => r.metric)).toEqual(METRICS.map((m) => m.name));
    for (const r of result.rows) {
      expect(r.tasks, r.metric).toBe(3);
      for (const v of [
        r.people.estimate,
        r.simulator.estimate,
        r.difference.estimate,
        r.difference.lo,
        r.difference.hi,
      ])
        expect(Number.isFinite(v), r.metric).toBe(true);
      expect(r.difference.estimate).toBeCloseTo(r.people.estimate - r.simulator.estimate, 12);
    }
    const row = (name: string) => result.rows.find((r) => r.metric === name)!;
    // People's side, worked out from the sessions above: each task 1 success in 2; "I don't know" on two tasks'
    // second sessions (0.5, 0.5, 0); the reference pasted once (0, 0, 0.5); two agent turns each.
    expect(row('success').people.estimate).toBeCloseTo(0.5, 12);
    expect(row('score').people.estimate).toBeCloseTo(0.75, 12);
    expect(row('dontKnowShare').people.estimate).toBeCloseTo(1 / 3, 12);
    expect(row('referencePasted').people.estimate).toBeCloseTo(1 / 6, 12);
    expect(row('agentTurns')).toMatchObject({ people: { estimate: 2 }, simulator: { estimate: 2 } });
    // The games were played by each task's people's versions: llama-a (200 tokens) and llama-b (150), two turns a game.
    const asked = server.chatRequests().map((r) => (r.body as ChatBody).max_tokens);
    expect(asked.filter((x) => x === 200)).toHaveLength(6);
    expect(asked.filter((x) => x === 150)).toHaveLength(6);

    const png = readFileSync(join(out, 'calibration.png'));
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    expect(png.length).toBeGreaterThan(10_000);
    const md = readFileSync(join(out, 'calibration.md'), 'utf8');
    expect(md).toContain('| success | 50.0% |');
    expect(md).toContain('![people against the simulator](calibration.png)');
    expect(md).toContain(
      "Leak rate (sessions whose collaborator replies contain the reference's code), 95% Wilson interval: people 16.7% [",
    );
    expect(JSON.parse(readFileSync(join(out, 'calibration.json'), 'utf8'))).toEqual(result);
    // The figure: a panel a metric, each with both sides.
    const svg = calibrationSvg(result);
    expect(svg.match(/<svg x=/g)).toHaveLength(METRICS.length);
    expect(readFileSync(join(out, 'calibration.svg'), 'utf8')).toBe(svg);
  }, 300_000);

  it('plays the LLM simulator behind SIMULATOR_LLM_URL when asked', async () => {
    const sim = await startOpenAiServer({ model: 'sim-test', reply: () => "I don't know.", tokenDelayMs: 0 });
    try {
      const run = await sweetloop(['study', 'calibrate', 'cal', '--simulator', 'llm', '--per-task', '1'], {
        SIMULATOR_LLM_URL: sim.url,
        SIMULATOR_LLM_MODEL: 'sim-test',
      });
      expect(run.code, run.stderr).toBe(0);
      const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as CalibrationResult;
      // One game a task, by each task's oldest session's version (llama-a); the simulator was asked once a game.
      expect(result).toMatchObject({
        simulator: 'llm:sim-test',
        gamesPerTask: 1,
        games: 3,
        policies: [{ name: 'llama-a', games: 3 }],
      });
      const asked = sim.chatRequests().map((r) => r.body as ChatBody);
      expect(asked).toHaveLength(3);
      expect(
        asked.every(
          (b) => b.model === 'sim-test' && String(b.messages[0]!.content).includes('You are role-playing a person'),
        ),
      ).toBe(true);
      const row = (name: string) => result.rows.find((r) => r.metric === name)!;
      expect(row('dontKnowShare')).toMatchObject({ simulator: { estimate: 1 }, tasks: 3 });
      expect(row('replyChars')).toMatchObject({ simulator: { estimate: "I don't know.".length }, tasks: 3 });
      expect(row('factsPerReply').simulator.estimate).toBe(0);
    } finally {
      await sim.close();
    }
  }, 180_000);

  it("counts the LLM simulator's leaks: one that pastes the hidden function leaks in every session", async () => {
    // Told the reference (tasks/llm-simulator.ts), this one hands over its code instead of answering.
    // The function inside the hidden block (the description before it may name the signature too).
    const paste = (body: ChatBody) =>
      /<hidden_function>[\s\S]*?(def [\s\S]*?)(?=<\/hidden_function>)/.exec(String(body.messages[0]!.content))?.[1] ??
      "I don't know.";
    const sim = await startOpenAiServer({ model: 'sim-leaky', reply: paste, tokenDelayMs: 0 });
    try {
      const run = await sweetloop(['study', 'calibrate', 'cal', '--simulator', 'llm', '--per-task', '1'], {
        SIMULATOR_LLM_URL: sim.url,
        SIMULATOR_LLM_MODEL: 'sim-leaky',
      });
      expect(run.code, run.stderr).toBe(0);
      const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as CalibrationResult;
      expect(result.leak.simulator).toMatchObject({ sessions: 3, leaked: 3, rate: { estimate: 1, hi: 1 } });
      expect(result.leak.people).toMatchObject({ sessions: 6, leaked: 1 });
      expect(run.stdout).toMatch(/simulator 100\.0% \[\d+\.\d%, 100\.0%\] \(3 of 3 sessions\)/);
    } finally {
      await sim.close();
    }
  }, 180_000);

  it("refuses a study without people's answered sessions, and the LLM simulator when none is configured", async () => {
    const pool = join(dir, 'pool-2.txt');
    writeFileSync(pool, records[0]!.externalId);
    expect(
      (await sweetloop(['study', 'create', 'empty', '--tasks', pool, '--per-task', '1', '--policy', 'llama-a'])).code,
    ).toBe(0);
    const empty = await sweetloop(['study', 'calibrate', 'empty']);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/Study "empty" has no answered sessions of people yet/);
    const llm = await sweetloop(['study', 'calibrate', 'cal', '--simulator', 'llm']);
    expect(llm.code).toBe(1);
    expect(llm.stderr).toMatch(/LLM simulator is not configured: set SIMULATOR_LLM_URL and SIMULATOR_LLM_MODEL/);
  }, 120_000);
});
