// A small database for the dashboard's tests (test/bot/dashboard/), made through the stores as production makes
// it: two Discord guilds with one person each (one of them typed hostile markup), simulated games of two policy
// versions on shared tasks (a leaderboard) that the promotion gate judged, a frontend game, a SWEET-RL run with loss
// curves, phases and the critic against the tests, whose critic scored a session's agent turns, a run in progress,
// people's /compare preferences, a study with pay rules, a flag and a rating.
import type { Database } from '../prisma/db.ts';
import { importTasks } from '../prisma/task-store.ts';
import { acceptConsent } from '../prisma/participant-store.ts';
import { appendAgentTurn, appendHumanTurn, createSession } from '../prisma/session-store.ts';
import { recordEvaluation } from '../prisma/evaluation-store.ts';
import { storeFinishedSession } from '../prisma/finished-session-store.ts';
import { recordComment, recordRating } from '../prisma/rating-store.ts';
import {
  createTrainingRun,
  markRunRunning,
  publishRun,
  recordTrainingStep,
  saveRunProgress,
} from '../prisma/run-store.ts';
import { registerVersion } from '../prisma/policy-store.ts';
import { deployPolicyByName, recordGateEvidence } from '../prisma/deployment-store.ts';
import type { Prisma } from '../prisma/generated/client.ts';
import { criticAgainstTests, CRITIC_TESTS_METRIC } from '../trainer/critic-tests.ts';
import { comparePaired, type GameOutcome } from '../trainer/evaluate.ts';
import { gateEvidence, gateLevel, playedGames } from '../trainer/promote.ts';
import { saveCriticAdvantages } from '../prisma/dashboard-store.ts';
import { recordFlag } from '../prisma/moderation-store.ts';
import { offerComparison, recordPreference } from '../prisma/preference-store.ts';
import { createStudy, recordCalibration } from '../prisma/study-store.ts';
import { calibrationRows, METRICS } from '../tasks/calibration.ts';
import type { TurnProvenance } from '../tasks/agent.ts';

export const GUILD_A = '811111111111111111';
export const GUILD_B = '822222222222222222';
export const PERSON_A = '833333333333333333';
export const PERSON_B = '844444444444444444';
/** A reply a person typed, meant to run or navigate if the page rendered it as HTML. */
export const HOSTILE =
  '<script>window.__pwned = "script"</script><img src=x onerror="window.__pwned = \'img\'"> [click me](javascript:window.__pwned=\'md\') <a href="javascript:window.__pwned=\'a\'">link</a> <b>bold?</b>';
export const GUILD_B_MARKER = 'only guild B may read this';

const FRONTEND_PAGE = (title: string, colour: string) =>
  `<!doctype html><html><body style="margin:0;font-family:sans-serif"><header style="background:${colour};color:#fff;padding:24px"><h1>${title}</h1></header><main style="padding:24px"><p>Fresh bread every morning.</p></main></body></html>`;

function provenance(i: number): TurnProvenance {
  const recorded = i === 3;
  return {
    engine: 'endpoint',
    servedModel: 'llama-3.1-8b-instruct',
    adapter: i % 2 ? 'sweet-0001' : null,
    sampling: { temperature: 0.7, topP: 0.95, maxTokens: 512, seed: 42 + i },
    finishReason: 'stop',
    latencyMs: 800 + i,
    // As a server reports it, with a fraction nobody needs: the page rounds it.
    firstTokenMs: 71.749393000005,
    prompt: [{ role: 'user', content: 'task' }],
    droppedTurns: i === 2 ? 1 : 0,
    logprobs: ['What', ' should', ' the', ' function', ' return', '?'].map((token, k) => ({
      token,
      logprob: -0.2 * k,
    })),
    // The answer's turn with its exact tokens, as a version that records them stores it.
    ...(recorded
      ? { tokens: { ids: [101, 102, 103], logprobs: [-0.1, -0.2, -0.3], weightsVersion: 'adapter:sweet-0001' } }
      : {}),
  };
}

export interface DashboardData {
  studyId: string;
  sessionA: string;
  sessionB: string;
  frontendSession: string;
  runId: string;
  policies: { starter: string; sweet: string };
}

export async function seedDashboardData(db: Database): Promise<DashboardData> {
  const prisma = db.prisma;
  const backend = [0, 1, 2, 3, 4].map((i) => ({
    kind: 'backend' as const,
    description: `Write a function that adds ${i} to a number. The signature of the function is: def add${i}(x)`,
    reference: `def add${i}(x):\n    return x + ${i}`,
    testCases: [`add${i}(1)`, `add${i}(2)`],
    source: 'builtin' as const,
    externalId: `dash-${i}`,
    split: 'train' as const,
  }));
  const frontend = {
    kind: 'frontend' as const,
    description: 'A bakery home page with a blue header.',
    reference: FRONTEND_PAGE('Bakery', '#1d4ed8'),
    source: 'builtin' as const,
    externalId: 'dash-fe',
    split: 'train' as const,
  };
  await importTasks(prisma, [...backend, frontend]);
  const tasks = await prisma.task.findMany({ orderBy: { externalId: 'asc' } });
  const be = tasks.filter((t) => t.kind === 'backend');
  const fe = tasks.find((t) => t.kind === 'frontend')!;

  const starter = await registerVersion(prisma, {
    name: 'starter',
    algorithm: 'starter',
    checkpointPath: '/ck/starter',
  });
  const run = await createTrainingRun(
    prisma,
    { algorithm: 'sweet', config: { filter: 'success-only' }, dataSnapshot: { sessions: [] } },
    (id) => `/ck/runs/${id}`,
  );
  for (let step = 0; step < 12; step++) {
    await recordTrainingStep(prisma, run.id, 'critic', step, { loss: 0.69 * Math.exp(-step / 5) + 0.1 });
    await recordTrainingStep(prisma, run.id, 'actor', step, { loss: 0.5 * Math.exp(-step / 8) + 0.2 });
  }
  // Its progress as trainer/run-state.ts leaves it, and the critic against the tests as trainer/run-sweet.ts
  // stores it (here over made-up scores of two sessions of each of five tasks: of the 4 pairs the tests tell apart, the
  // critic orders 2 as the tests do, 1 the other way, and ties 1).
  await saveRunProgress(
    prisma,
    run.id,
    {
      done: ['critic', 'collect'],
      current: { phase: 'actor', step: 12, dir: '/ck/x' },
      collected: 6,
      phases: ['critic', 'collect', 'actor'],
      totals: { critic: 12, collect: 6, actor: 12 },
      rng: { algorithm: 'mulberry32', seed: 1 },
    },
    '',
  );
  const check = criticAgainstTests(
    [0, 1, 2, 3, 4].flatMap((i) => [
      { taskId: `t${i}`, score: 0.5 },
      { taskId: `t${i}`, score: i < 4 ? 1 : 0.5 },
    ]),
    [0.1, 0.3, 0.2, 0.5, 0.4, 0.1, 0.3, 0.3, 0.2, 0.25],
  );
  const sweet = await publishRun(
    prisma,
    run.id,
    { critic: { loss: 0.1 }, [CRITIC_TESTS_METRIC]: check },
    { name: 'sweet-0001', algorithm: 'sweet', checkpointPath: '/ck/sweet-0001', parentId: starter.id },
  );
  // A second run, still running: rft at 10 of 40 updates.
  const running = await createTrainingRun(
    prisma,
    {
      algorithm: 'rft',
      config: {},
      dataSnapshot: {
        sessions: [
          { id: 'x', reward: 1 },
          { id: 'y', reward: 0 },
        ],
      },
    },
    (id) => `/ck/runs/${id}`,
  );
  await markRunRunning(prisma, running);
  for (let step = 0; step < 10; step++)
    await recordTrainingStep(prisma, running.id, 'rft', step, { loss: 2 - 0.1 * step });
  await saveRunProgress(
    prisma,
    running.id,
    {
      done: [],
      current: { phase: 'rft', step: 10, dir: '/ck/y' },
      phases: ['rft'],
      totals: { rft: 40 },
      rng: { algorithm: 'mulberry32', seed: 1 },
    },
    '',
  );
  await deployPolicyByName(db, 'cli', 'starter');

  // Simulated games: both versions on every backend task, sweet a little better; and one frontend game.
  const t0 = Date.parse('2026-11-01T10:00:00Z');
  let k = 0;
  const games: Record<string, GameOutcome[]> = { starter: [], 'sweet-0001': [] };
  for (const t of be) {
    for (const [v, base] of [
      [starter, 0.4],
      [sweet, 0.6],
    ] as const) {
      for (let rep = 0; rep < 2; rep++) {
        const score = Math.min(1, base + 0.1 * ((k++ % 3) - 1));
        const sessionId = await storeFinishedSession(prisma, {
          taskId: t.id,
          policyVersionId: v.id,
          collaborator: 'rule-simulator',
          channel: 'simulated',
          turns: [
            { role: 'agent', content: 'What should it return for negative numbers?' },
            { role: 'human', content: 'The same rule applies.' },
            { role: 'agent', content: `I WANT TO ANSWER: def f(x): return x` },
          ],
          answer: 'def f(x): return x',
          endReason: 'answered',
          evaluation: {
            score,
            success: score === 1,
            testsPassed: Math.round(score * 2),
            testsTotal: 2,
            detail: { tests: [] },
            evaluatorVersion: 'fixture',
          },
          startedAt: new Date(t0 + k * 60_000),
          endedAt: new Date(t0 + k * 60_000 + 30_000),
        });
        games[v.name]!.push({ taskId: t.id, score, success: score === 1, agentTurns: 2, sessionId });
      }
    }
  }
  // The gate judged sweet-0001 against starter on these games (stored as sessions, so each links to its page).
  const comparison = comparePaired(
    { version: 'sweet-0001', games: games['sweet-0001']! },
    { version: 'starter', games: games.starter! },
    { kind: 'backend', level: gateLevel(0.05), seed: 1 },
  );
  const evidence = {
    ...gateEvidence(comparison, { alpha: 0.05, margin: 0 }),
    played: playedGames(games['sweet-0001']!, games.starter!),
  };
  await recordGateEvidence(
    prisma,
    'trainer',
    sweet,
    JSON.parse(JSON.stringify(evidence)) as Prisma.InputJsonObject,
    evidence.decision,
  );
  const frontendSession = await storeFinishedSession(prisma, {
    taskId: fe.id,
    policyVersionId: sweet.id,
    collaborator: 'rule-simulator',
    channel: 'simulated',
    turns: [
      { role: 'agent', content: 'What colour is the header?' },
      { role: 'human', content: 'Blue.' },
      { role: 'agent', content: 'OUTPUT: page' },
    ],
    answer: FRONTEND_PAGE('Bakery', '#15803d'),
    endReason: 'answered',
    evaluation: {
      score: 0.82,
      success: false,
      metric: 'pixel-ssim-v1',
      detail: { metric: 'pixel-ssim-v1', similarity: 0.82, threshold: 0.9 },
      evaluatorVersion: 'fixture',
    },
    startedAt: new Date(t0 + 100 * 60_000),
    endedAt: new Date(t0 + 101 * 60_000),
  });

  // People on Discord, one per guild, in a study with pay rules bound to both guilds.
  const alice = await acceptConsent(prisma, PERSON_A, 'Alice');
  const bob = await acceptConsent(prisma, PERSON_B, 'Bob');
  const study = await createStudy(
    prisma,
    'cli',
    {
      name: 'pilot',
      kind: 'backend',
      split: 'train',
      perTask: 2,
      seed: 1,
      taskIds: be.map((t) => t.id),
      arms: [{ policyVersionId: sweet.id, share: 100 }],
      consentText: null,
      payPerSessionCents: 150,
      bonusSuccessCents: 50,
      currency: 'EUR',
      maxSessionsPerPerson: null,
      opensAt: null,
      closesAt: null,
      guildIds: [GUILD_A, GUILD_B],
      channelIds: [],
    },
    { requireConsent: false },
  );
  const live = async (person: string, guildId: string, human: string) => {
    const s = await createSession(prisma, {
      taskId: be[0]!.id,
      participantId: person,
      policyVersionId: sweet.id,
      channel: 'discord',
      simulated: false,
      guildId,
      studyId: study.id,
    });
    await appendAgentTurn(prisma, s.id, {
      content: 'Should negative numbers be handled?',
      rawOutput: 'Should negative numbers be handled?',
      promptTokens: 210,
      completionTokens: 9,
      latencyMs: 812,
      provenance: provenance(1),
    });
    await appendHumanTurn(prisma, s.id, { content: human });
    await appendAgentTurn(prisma, s.id, {
      content: 'What about zero?',
      rawOutput: 'What about zero?',
      promptTokens: 240,
      completionTokens: 6,
      latencyMs: 640,
      provenance: provenance(2),
    });
    await appendHumanTurn(prisma, s.id, { content: 'Zero stays zero plus the constant.' });
    await appendAgentTurn(
      prisma,
      s.id,
      {
        content: 'def add0(x):\n    return x',
        rawOutput: 'I WANT TO ANSWER: def add0(x):\n    return x',
        promptTokens: 270,
        completionTokens: 12,
        latencyMs: 700,
        provenance: provenance(3),
      },
      { answer: 'def add0(x):\n    return x', endReason: 'answered' },
    );
    await recordEvaluation(
      prisma,
      s.id,
      {
        score: 0.5,
        success: false,
        testsPassed: 1,
        testsTotal: 2,
        evaluatorVersion: 'fixture',
        detail: {
          tests: [
            { call: 'add0(1)', expected: '1', actual: '1', passed: true },
            { call: 'add0(-1)', expected: '-1', actual: "'oops'", passed: false },
          ],
        },
      },
      0,
    );
    return s.id;
  };
  const sessionA = await live(alice.id, GUILD_A, HOSTILE);
  await recordRating(prisma, sessionA, alice.id, 2, 0);
  await recordComment(prisma, sessionA, alice.id, `It missed the negatives ${HOSTILE}`);
  await recordFlag(prisma, { id: 'cli', guildId: null, everyGuild: true }, sessionA, 'check the markup in the reply');
  const sessionB = await live(bob.id, GUILD_B, GUILD_B_MARKER);

  // The run's critic scored session A's agent turns: the first question helped, the second hurt.
  const agentTurns = await prisma.turn.findMany({
    where: { sessionId: sessionA, role: 'agent' },
    orderBy: { index: 'asc' },
  });
  await saveCriticAdvantages(
    prisma,
    run.id,
    agentTurns.map((t, i) => ({ turnId: t.id, advantage: [0.412, -0.137, 0.05][i] ?? 0 })),
  );

  // People's /compare choices: Alice prefers sweet-0001's sessions, with one tie.
  let seed = 1;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  for (let i = 0; i < 8; i++) {
    const c = await offerComparison(prisma, alice.id, random);
    if (!c) break;
    const choice = i === 3 ? 'tie' : c.a.policy === 'sweet-0001' ? 'a' : c.b.policy === 'sweet-0001' ? 'b' : 'tie';
    await recordPreference(prisma, c.preferenceId, alice.id, choice);
  }
  // A calibration of the study as `sweetloop study calibrate` stores it: per-task metrics of people and of the
  // simulator (people ask for more turns and say "I don't know" more often), through the real pairing.
  const metrics = (k: number, people: boolean) =>
    Object.fromEntries(
      METRICS.map((m) => [m.name, m.share ? (people ? 0.4 : 0.6) + 0.05 * k : (people ? 5 : 3) + k]),
    ) as Parameters<typeof calibrationRows>[0][number]['metrics'];
  await recordCalibration(prisma, study.id, 'rule-simulator', {
    study: 'pilot',
    simulator: 'rule-simulator',
    gamesPerTask: 2,
    seed: 1,
    tasks: be.length,
    peopleSessions: 2 * be.length,
    games: 2 * be.length,
    policies: [{ name: 'sweet-0001', games: 2 * be.length }],
    rows: calibrationRows(
      be.map((t, k) => ({ taskId: t.id, metrics: metrics(k, true) })),
      be.map((t, k) => ({ taskId: t.id, metrics: metrics(k % 2, false) })),
    ),
  });
  return {
    studyId: study.id,
    sessionA,
    sessionB,
    frontendSession,
    runId: run.id,
    policies: { starter: starter.id, sweet: sweet.id },
  };
}
