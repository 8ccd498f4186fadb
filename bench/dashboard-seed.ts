// The generated database of bench:dashboard (bench/dashboard.ts): sessions in bulk through SQL (bench/seed-sessions.ts,
// as bench:export), with flags and critic advantages, and around them
// what the other pages read, at the same scale: two studies holding every session (arms, pay rules), a calibration
// of each over the 500 tasks, 20 training runs with their updates and progress, a gate decision with its 400 games
// on each candidate, 20,000 answered /compare preferences and a quality score for every person.
import pg from 'pg';
import type { PrismaClient } from '../prisma/generated/client.ts';
import { createStudy, recordCalibration } from '../prisma/study-store.ts';
import { calibrationRows, METRICS } from '../tasks/calibration.ts';
import { seedSessionRows } from './seed-sessions.ts';
import { recordActiveTimes } from '../prisma/active-time-store.ts';

export async function seedSessions(url: string, n: number): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const q = (sql: string, params: unknown[] = []) => pool.query(sql, params);
  try {
    await seedSessionRows(pool, {
      sessions: n,
      people: 2000,
      tasks: 500,
      versions: 3,
      turns: 6,
      personStride: 7,
      spacing: '1 minute',
      textRepeat: { description: 6, reference: 6, turn: 4 },
      testSplitEvery: null,
      deployFirst: true,
      checkpointSha: false,
      guilds: 3,
      abandonEvery: 50,
      agentLatencyMs: 700,
      provenance: true,
      testDetail: true,
    });
    await q(
      `INSERT INTO "TrainingRun" (id, algorithm, config, status) VALUES (gen_random_uuid(), 'sweet', '{}', 'succeeded')`,
    );
    await q(
      `INSERT INTO "ModerationFlag" (id, "sessionId", reason) SELECT gen_random_uuid(), s.id, 'bench flag' FROM "Session" s WHERE abs(hashtext(s.id::text || 'f')) % 100 = 0`,
    );
    await q(`INSERT INTO "CriticAdvantage" (id, "trainingRunId", "turnId", advantage)
      SELECT gen_random_uuid(), (SELECT id FROM "TrainingRun" LIMIT 1), tu.id, (abs(hashtext(tu.id::text)) % 1000) / 1000.0 - 0.5
      FROM "Turn" tu JOIN "Session" s ON s.id = tu."sessionId" WHERE tu.role = 'agent' AND abs(hashtext(s.id::text || 'c')) % 10 = 0`);
    // VACUUM as autovacuum would have done on a live database: it sets the visibility map that lets the turn times
    // come from the index alone (prisma/study-stats.ts sessionTimes) rather than from every turn's row.
    await q('VACUUM ANALYZE');
  } finally {
    await pool.end();
  }
}

/** Studies, calibrations, training runs, gate games, preferences and quality scores around the sessions. */
export async function seedAround(url: string, prisma: PrismaClient): Promise<void> {
  // The generated sessions ended without the bot, so their active time is filled as a migration fills older
  // sessions' (bot/bootstrap.ts migrateDatabase); the bot writes it as each session ends.
  await recordActiveTimes(prisma);
  const tasks = await prisma.task.findMany({ select: { id: true }, orderBy: { contentHash: 'asc' } });
  const versions = await prisma.policyVersion.findMany({ orderBy: { name: 'asc' } });
  const guilds = ['900000000000000000', '900000000000000001', '900000000000000002'];
  const study = (name: string) =>
    createStudy(
      prisma,
      'bench',
      {
        name,
        kind: null,
        split: 'train',
        perTask: 300,
        seed: 1,
        taskIds: tasks.map((t) => t.id),
        arms: [
          { policyVersionId: versions[1]!.id, share: 50 },
          { policyVersionId: versions[2]!.id, share: 50 },
        ],
        consentText: `Consent for ${name}`,
        payPerSessionCents: 150,
        bonusSuccessCents: 50,
        currency: 'EUR',
        maxSessionsPerPerson: null,
        opensAt: null,
        closesAt: null,
        guildIds: guilds,
        channelIds: [],
      },
      { requireConsent: true },
    );
  const studies = [await study('bench-a'), await study('bench-b')];
  for (const [k, s] of studies.entries()) {
    const metrics = (i: number, people: boolean) =>
      Object.fromEntries(
        METRICS.map((m) => [
          m.name,
          m.share ? ((i * 7 + (people ? 3 : 5)) % 10) / 10 : 2 + ((i + (people ? 1 : 2)) % 5),
        ]),
      ) as Parameters<typeof calibrationRows>[0][number]['metrics'];
    await recordCalibration(prisma, s.id, 'rule-simulator', {
      study: s.name,
      simulator: 'rule-simulator',
      gamesPerTask: 2,
      seed: k,
      tasks: tasks.length,
      peopleSessions: 50_000,
      games: 2 * tasks.length,
      policies: [
        { name: versions[1]!.name, games: tasks.length },
        { name: versions[2]!.name, games: tasks.length },
      ],
      rows: calibrationRows(
        tasks.map((t, i) => ({ taskId: t.id, metrics: metrics(i, true) })),
        tasks.map((t, i) => ({ taskId: t.id, metrics: metrics(i, false) })),
      ),
    });
  }
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const q = (sql: string, params: unknown[] = []) => pool.query(sql, params);
  try {
    await q(
      `CREATE TEMP TABLE sg AS SELECT id, "taskId", "policyVersionId", row_number() OVER (ORDER BY "startedAt") - 1 AS g FROM "Session"`,
    );
    await q(`CREATE INDEX ON sg (g)`);
    await q(
      `CREATE TEMP TABLE p AS SELECT id, row_number() OVER (ORDER BY "discordUserId") - 1 AS i FROM "Participant"`,
    );
    await q(
      `UPDATE "Session" s SET "studyId" = CASE WHEN sg.g % 2 = 0 THEN $1::uuid ELSE $2::uuid END FROM sg WHERE sg.id = s.id`,
      [studies[0]!.id, studies[1]!.id],
    );
    // 20 runs: SWEET-RL (critic 500, collect 200 states, actor 500 updates) and RFT (500), each on 10,000 sessions.
    await q(`INSERT INTO "TrainingRun" (id, algorithm, config, "dataSnapshot", status, progress, metrics, "createdAt", "startedAt", "finishedAt", "heartbeatAt")
      SELECT gen_random_uuid(), CASE WHEN r % 2 = 0 THEN 'sweet' ELSE 'rft' END, '{}',
        jsonb_build_object('sessions', (SELECT jsonb_agg(jsonb_build_object('id', sg.id, 'reward', 0.5, 'simulated', false)) FROM sg WHERE sg.g % 10 = r % 10)),
        'succeeded'::"TrainingStatus",
        CASE WHEN r % 2 = 0 THEN '{"done":["critic","collect","actor"],"collected":200,"phases":["critic","collect","actor"],"totals":{"critic":500,"collect":200,"actor":500},"rng":{"algorithm":"mulberry32","seed":1}}'::jsonb
          ELSE '{"done":[],"current":{"phase":"rft","step":500,"dir":"/x"},"phases":["rft"],"totals":{"rft":500},"rng":{"algorithm":"mulberry32","seed":1}}'::jsonb END,
        CASE WHEN r % 2 = 0 THEN '{"criticVsTests":{"sessions":10000,"tasks":500,"pairs":180000,"agree":99000,"criticTies":10,"agreement":0.55,"spearman":0.12,"spearmanP":0.001}}'::jsonb ELSE '{}'::jsonb END,
        now() - r * interval '1 hour', now() - r * interval '1 hour', now() - r * interval '1 hour' + interval '50 minutes', now() - r * interval '1 hour' + interval '50 minutes'
      FROM generate_series(1, 20) r`);
    await q(`INSERT INTO "TrainingStep" (id, "runId", phase, step, metrics)
      SELECT gen_random_uuid(), r.id, ph.phase, s, jsonb_build_object('loss', 0.7 * exp(-s / 200.0) + 0.1, 'correct', 0.5)
      FROM "TrainingRun" r JOIN LATERAL (SELECT unnest(CASE WHEN r.algorithm = 'sweet' THEN ARRAY['critic', 'actor'] ELSE ARRAY['rft'] END) AS phase) ph ON true
      CROSS JOIN generate_series(0, 499) s WHERE r.progress IS NOT NULL`);
    // Each candidate published by a run and judged by the gate against the deployed version on 400 games.
    await q(`WITH runs AS (SELECT id, row_number() OVER (ORDER BY "createdAt") AS k FROM "TrainingRun" WHERE algorithm = 'sweet')
      UPDATE "PolicyVersion" v SET "trainingRunId" = runs.id FROM runs WHERE runs.k = (CASE v.name WHEN 'policy-2' THEN 1 WHEN 'policy-3' THEN 2 END)`);
    await q(`UPDATE "PolicyVersion" v SET metrics = jsonb_build_object('gate', jsonb_build_object('verdict', 'tie', 'decision', 'kept', 'candidate', v.name, 'against', 'policy-1', 'kind', 'backend',
        'games', 400, 'tasks', 400, 'alpha', 0.05, 'margin', 0, 'decidedAt', now()::text,
        'played', (SELECT jsonb_agg(jsonb_build_object('taskId', c."taskId", 'candidate', jsonb_build_object('score', 0.6, 'success', false, 'sessionId', c.id), 'deployed', jsonb_build_object('score', 0.5, 'success', false, 'sessionId', d.id)) ORDER BY c.g)
          FROM sg c JOIN sg d ON d.g = c.g + 500 * (CASE WHEN v.name = 'policy-2' THEN 1 ELSE 2 END) WHERE c."policyVersionId" = v.id AND c.g < 3 * 400)))
      WHERE v.name IN ('policy-2', 'policy-3')`);
    // /compare: 20,000 answered choices between two sessions of one task played by different versions.
    await q(`INSERT INTO "Preference" (id, "raterId", "sessionAId", "sessionBId", choice, "answeredAt")
      SELECT gen_random_uuid(), p.id, a.id, b.id, (ARRAY['a', 'b', 'tie'])[1 + a.g % 3], now()
      FROM sg a JOIN sg b ON b.g = a.g + 500 JOIN p ON p.i = (a.g * 11) % 2000 WHERE a.g < 20000`);
    await q(`INSERT INTO "ParticipantQuality" ("participantId", score, sessions, signals)
      SELECT id, (abs(hashtext(id::text)) % 100) / 100.0, 50, '{"tooFast":0.1,"copyPaste":0.02,"gibberish":0}' FROM "Participant"`);
    // VACUUM again: filling the active times and the studies rewrote every session, which clears the visibility map
    // the covering indexes' index-only scans need (prisma/study-stats.ts); autovacuum would get there on its own, at
    // a moment of its choosing in the middle of the timings.
    await q('VACUUM ANALYZE');
  } finally {
    await pool.end();
  }
}
