// npm run bench:dashboard [-- --sessions N] [--requests N]
//
// Fills a throwaway Postgres database with N generated sessions (default 100,000: 6 turns each with provenance on
// the agent turns, an evaluation with per-test detail, a rating on every other one, a flag on 1 in 100, critic
// advantages on 1 in 10, over 2,000 people in 3 guilds, 500 tasks and 3 policy versions), then asks the dashboard
// (bot/dashboard/server.ts, in this process through fastify's inject: no network, so the figure is the server's
// own time: routing, the database queries and rendering) for the session list and for session pages, and prints
// p50/p99 of each. The goal (issue 33): p99 under 300 ms. The database is dropped afterwards.
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { countArg } from './args.ts';
import { percentile } from '../tasks/stats.ts';

async function seed(url: string, n: number): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const q = (sql: string, params: unknown[] = []) => pool.query(sql, params);
  try {
    await q(`INSERT INTO "Participant" (id, "discordUserId", role, "consentGivenAt", "updatedAt")
      SELECT gen_random_uuid(), (100000000000000000 + g)::text, 'participant', now(), now() FROM generate_series(1, 2000) g`);
    await q(`INSERT INTO "Task" (id, kind, source, "externalId", "contentHash", description, "hiddenReference", "testCases", split)
      SELECT gen_random_uuid(), CASE WHEN g % 4 = 0 THEN 'frontend' ELSE 'backend' END::"TaskKind", 'generated', g::text, md5(g::text),
        'Write a function that does task ' || g || '. ' || repeat(md5(g::text || 'd'), 6) || ' The signature of the function is: def f' || g || '(x)',
        'def f' || g || '(x):' || chr(10) || '    return ' || repeat(md5(g::text || 'r'), 6),
        CASE WHEN g % 4 = 0 THEN NULL ELSE (SELECT jsonb_agg('f' || g || '(' || k || ')') FROM generate_series(1, 10) k) END, 'train'
      FROM generate_series(1, 500) g`);
    await q(`INSERT INTO "PolicyVersion" (id, name, algorithm, "checkpointPath", status, "createdAt")
      SELECT gen_random_uuid(), 'policy-' || g, 'sweet', '/ck/' || g, (CASE WHEN g = 1 THEN 'deployed' ELSE 'candidate' END)::"PolicyStatus", now() - (10 - g) * interval '1 day' FROM generate_series(1, 3) g`);
    await q(`INSERT INTO "TrainingRun" (id, algorithm, config, status) VALUES (gen_random_uuid(), 'sweet', '{}', 'succeeded')`);
    await q(`CREATE TEMP TABLE p AS SELECT id, row_number() OVER (ORDER BY "discordUserId") - 1 AS i FROM "Participant"`);
    await q(`CREATE TEMP TABLE t AS SELECT id, row_number() OVER (ORDER BY "contentHash") - 1 AS i FROM "Task"`);
    await q(`CREATE TEMP TABLE v AS SELECT id, row_number() OVER (ORDER BY name) - 1 AS i FROM "PolicyVersion"`);
    await q(`INSERT INTO "Session" (id, "taskId", "participantId", "policyVersionId", channel, "guildId", status, "turnCount", answer, reward, "startedAt", "lastActivityAt", "endedAt", "endReason")
      SELECT gen_random_uuid(), t.id, p.id, v.id, 'discord', (900000000000000000 + g % 3)::text,
        (CASE WHEN g % 50 = 0 THEN 'abandoned' ELSE 'answered' END)::"SessionStatus", 3, 'def f(x):' || chr(10) || '    return ' || md5(g::text), (g % 11) / 10.0,
        timestamp '2026-01-01' + g * interval '1 minute', timestamp '2026-01-01' + g * interval '1 minute',
        timestamp '2026-01-01' + g * interval '1 minute' + interval '10 minutes', 'answered'
      FROM generate_series(0, $1::int - 1) g JOIN p ON p.i = (g * 7) % 2000 JOIN t ON t.i = g % 500 JOIN v ON v.i = g % 3`, [n]);
    await q(`INSERT INTO "Turn" (id, "sessionId", index, role, content, "latencyMs", "promptTokens", "completionTokens", provenance, "createdAt")
      SELECT gen_random_uuid(), s.id, k, CASE WHEN k % 2 = 0 THEN 'agent' ELSE 'human' END::"TurnRole",
        CASE WHEN k % 2 = 0 THEN 'Could you tell me more about ' ELSE 'It should ' END || repeat(md5(s.id::text || k), 4),
        CASE WHEN k % 2 = 0 THEN 700 + k END, CASE WHEN k % 2 = 0 THEN 300 + 40 * k END, CASE WHEN k % 2 = 0 THEN 20 END,
        CASE WHEN k % 2 = 0 THEN jsonb_build_object('engine', 'endpoint', 'servedModel', 'llama-3.1-8b-instruct', 'adapter', null,
          'sampling', jsonb_build_object('temperature', 0.7, 'topP', 0.95, 'maxTokens', 512, 'seed', k), 'finishReason', 'stop', 'latencyMs', 700 + k,
          'firstTokenMs', 90, 'prompt', '[]'::jsonb, 'droppedTurns', 0,
          'logprobs', (SELECT jsonb_agg(jsonb_build_object('token', ' tok' || j, 'logprob', -0.05 * j)) FROM generate_series(1, 20) j)) END,
        s."startedAt" + k * interval '30 seconds'
      FROM "Session" s CROSS JOIN generate_series(0, 5) k`);
    await q(`INSERT INTO "Evaluation" (id, "sessionId", score, success, "testsPassed", "testsTotal", detail, "evaluatorVersion")
      SELECT gen_random_uuid(), s.id, s.reward, s.reward = 1, round(s.reward * 10)::int, 10,
        jsonb_build_object('tests', (SELECT jsonb_agg(jsonb_build_object('call', 'f(' || k || ')', 'expected', k::text, 'actual', CASE WHEN k <= s.reward * 10 THEN k::text ELSE 'None' END, 'passed', k <= s.reward * 10)) FROM generate_series(1, 10) k)),
        'bench' FROM "Session" s WHERE s.status = 'answered'`);
    await q(`INSERT INTO "Rating" (id, "sessionId", "raterId", value, comment)
      SELECT gen_random_uuid(), s.id, s."participantId", 1 + (abs(hashtext(s.id::text)) % 5), 'bench comment' FROM "Session" s WHERE abs(hashtext(s.id::text)) % 2 = 0`);
    await q(`INSERT INTO "ModerationFlag" (id, "sessionId", reason) SELECT gen_random_uuid(), s.id, 'bench flag' FROM "Session" s WHERE abs(hashtext(s.id::text || 'f')) % 100 = 0`);
    await q(`INSERT INTO "CriticAdvantage" (id, "trainingRunId", "turnId", advantage)
      SELECT gen_random_uuid(), (SELECT id FROM "TrainingRun" LIMIT 1), tu.id, (abs(hashtext(tu.id::text)) % 1000) / 1000.0 - 0.5
      FROM "Turn" tu JOIN "Session" s ON s.id = tu."sessionId" WHERE tu.role = 'agent' AND abs(hashtext(s.id::text || 'c')) % 10 = 0`);
    await q('ANALYZE');
  } finally {
    await pool.end();
  }
}

async function main(): Promise<void> {
  const sessions = countArg('sessions', 100_000);
  const requests = countArg('requests', 200);
  const { createTestDatabase } = await import('../bot/testing/database.ts');
  const { buildDashboard } = await import('../bot/dashboard/server.ts');
  const t = await createTestDatabase();
  const load0 = loadavg()[0]!;
  try {
    const s0 = performance.now();
    await seed(t.url, sessions);
    console.log(`seeded ${sessions.toLocaleString('en')} sessions in ${((performance.now() - s0) / 1000).toFixed(1)} s`);
    const app = await buildDashboard({ db: t.db, host: '127.0.0.1', port: 0, salt: 'bench-dashboard-salt', chromiumPath: '/usr/bin/chromium' });
    const ids = (await t.prisma.session.findMany({ select: { id: true }, orderBy: { id: 'asc' } })).map((s) => s.id);
    const policy = (await t.prisma.policyVersion.findFirstOrThrow({ where: { name: 'policy-2' } })).id;
    const listUrls = (i: number) => {
      const variants = [`/sessions?page=${1 + (i % 20)}`, '/sessions?kind=frontend', '/sessions?outcome=success', '/sessions?flag=open', `/sessions?policy=${policy}`, '/sessions?rating=4&from=2026-02-01&to=2026-02-28'];
      return variants[i % variants.length]!;
    };
    const measure = async (name: string, urlOf: (i: number) => string) => {
      for (let i = 0; i < 10; i++) await app.inject({ method: 'GET', url: urlOf(i), headers: { host: '127.0.0.1' } });
      const times: number[] = [];
      for (let i = 0; i < requests; i++) {
        const a = performance.now();
        const r = await app.inject({ method: 'GET', url: urlOf(i), headers: { host: '127.0.0.1' } });
        times.push(performance.now() - a);
        if (r.statusCode !== 200) throw new Error(`${urlOf(i)}: ${r.statusCode}`);
      }
      const row = { page: name, requests, p50: percentile(times, 50), p99: percentile(times, 99), max: Math.max(...times) };
      console.log(`${name.padEnd(14)} p50 ${row.p50.toFixed(1)} ms  p99 ${row.p99.toFixed(1)} ms  max ${row.max.toFixed(1)} ms  (${requests} requests)`);
      return row;
    };
    const rows = [await measure('session list', listUrls), await measure('session page', (i) => `/sessions/${ids[(i * 7919) % ids.length]}`)];
    await app.close();
    console.log(JSON.stringify({ sessions, cores: cpus().length, loadBefore: load0, loadAfter: loadavg()[0], rows }));
  } finally {
    await t.drop();
  }
}

await main();
