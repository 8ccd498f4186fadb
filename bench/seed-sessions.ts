// Generated sessions in bulk through SQL (generate_series), the shape bench:dashboard (bench/dashboard-seed.ts) and
// bench:export (bench/export.ts) both fill their throwaway database with: people, tasks (three backend to one
// frontend), policy versions, then sessions spread over them with their turns, an evaluation and a rating on every
// other one. What differs between the two benchmarks is an option here.
import type pg from 'pg';

export interface SeedShape {
  sessions: number;
  people: number;
  tasks: number;
  versions: number;
  /** Turns a session (agent and human alternating, 30 s apart); a session's turnCount is its agent turns. */
  turns: number;
  /** Session g is person (g x personStride) mod people. */
  personStride: number;
  /** Between two sessions' starts, as a Postgres interval ('1 minute'). */
  spacing: string;
  /** md5 blocks in a task's description, its reference, and a turn's text. */
  textRepeat: { description: number; reference: number; turn: number };
  /** Every nth task is in the test split (null: all train). */
  testSplitEvery: number | null;
  /** The first version is deployed, the others candidates (else every version has the column's default). */
  deployFirst: boolean;
  /** Versions carry a checkpoint sha256. */
  checkpointSha: boolean;
  /** Sessions spread over this many Discord guilds (0: no guild). */
  guilds: number;
  /** Every nth session is abandoned (null: all answered). */
  abandonEvery: number | null;
  /** Agent turns' latency is this plus the turn's index. */
  agentLatencyMs: number;
  /** Agent turns carry token counts and full provenance with 20 logprobs. */
  provenance: boolean;
  /** Evaluations list each of 10 tests with expected and actual value (else an empty list). */
  testDetail: boolean;
}

const PROVENANCE = `jsonb_build_object('engine', 'endpoint', 'servedModel', 'llama-3.1-8b-instruct', 'adapter', null,
  'sampling', jsonb_build_object('temperature', 0.7, 'topP', 0.95, 'maxTokens', 512, 'seed', k), 'finishReason', 'stop', 'latencyMs', 700 + k,
  'firstTokenMs', 90, 'prompt', '[]'::jsonb, 'droppedTurns', 0,
  'logprobs', (SELECT jsonb_agg(jsonb_build_object('token', ' tok' || j, 'logprob', -0.05 * j)) FROM generate_series(1, 20) j))`;

const TEST_DETAIL = `jsonb_build_object('tests', (SELECT jsonb_agg(jsonb_build_object('call', 'f(' || k || ')', 'expected', k::text, 'actual', CASE WHEN k <= s.reward * 10 THEN k::text ELSE 'None' END, 'passed', k <= s.reward * 10)) FROM generate_series(1, 10) k))`;

/** Fills the tables; leaves temp tables p, t and v (people, tasks and versions numbered from 0) on the connection. */
export async function seedSessionRows(pool: pg.Pool, o: SeedShape): Promise<void> {
  const q = (sql: string, params: unknown[] = []) => pool.query(sql, params);
  await q(
    `INSERT INTO "Participant" (id, "discordUserId", role, "consentGivenAt", "updatedAt")
    SELECT gen_random_uuid(), (100000000000000000 + g)::text, 'participant', now(), now() FROM generate_series(1, $1::int) g`,
    [o.people],
  );
  await q(
    `INSERT INTO "Task" (id, kind, source, "externalId", "contentHash", description, "hiddenReference", "testCases", split)
    SELECT gen_random_uuid(), CASE WHEN g % 4 = 0 THEN 'frontend' ELSE 'backend' END::"TaskKind", 'generated', g::text, md5(g::text),
      'Write a function that does task ' || g || '. ' || repeat(md5(g::text || 'd'), $2::int) || ' The signature of the function is: def f' || g || '(x)',
      'def f' || g || '(x):' || chr(10) || '    return ' || repeat(md5(g::text || 'r'), $3::int),
      CASE WHEN g % 4 = 0 THEN NULL ELSE (SELECT jsonb_agg('f' || g || '(' || k || ')') FROM generate_series(1, 10) k) END,
      (CASE WHEN $4::int IS NOT NULL AND g % $4::int = 0 THEN 'test' ELSE 'train' END)::"TaskSplit"
    FROM generate_series(1, $1::int) g`,
    [o.tasks, o.textRepeat.description, o.textRepeat.reference, o.testSplitEvery],
  );
  await q(
    `INSERT INTO "PolicyVersion" (id, name, algorithm, "checkpointPath", "checkpointSha256", status, "createdAt")
    SELECT gen_random_uuid(), 'policy-' || g, 'sweet', '/ck/' || g, CASE WHEN $2::bool THEN md5(g::text) END,
      (CASE WHEN $3::bool AND g = 1 THEN 'deployed' ELSE 'candidate' END)::"PolicyStatus", now() - (10 - g) * interval '1 day' FROM generate_series(1, $1::int) g`,
    [o.versions, o.checkpointSha, o.deployFirst],
  );
  await q(`CREATE TEMP TABLE p AS SELECT id, row_number() OVER (ORDER BY "discordUserId") - 1 AS i FROM "Participant"`);
  await q(`CREATE TEMP TABLE t AS SELECT id, row_number() OVER (ORDER BY "contentHash") - 1 AS i FROM "Task"`);
  await q(`CREATE TEMP TABLE v AS SELECT id, row_number() OVER (ORDER BY name) - 1 AS i FROM "PolicyVersion"`);
  await q(
    `INSERT INTO "Session" (id, "taskId", "participantId", "policyVersionId", channel, "guildId", status, "turnCount", answer, reward, "startedAt", "lastActivityAt", "endedAt", "endReason")
    SELECT gen_random_uuid(), t.id, p.id, v.id, 'discord', CASE WHEN $7::int > 0 THEN (900000000000000000 + g % $7::int)::text END,
      (CASE WHEN $8::int IS NOT NULL AND g % $8::int = 0 THEN 'abandoned' ELSE 'answered' END)::"SessionStatus", $5::int, 'def f(x):' || chr(10) || '    return ' || md5(g::text), (g % 11) / 10.0,
      timestamp '2026-01-01' + g * $6::interval, timestamp '2026-01-01' + g * $6::interval,
      timestamp '2026-01-01' + g * $6::interval + interval '10 minutes', 'answered'
    FROM generate_series(0, $1::int - 1) g JOIN p ON p.i = (g * $2::int) % $3::int JOIN t ON t.i = g % $4::int JOIN v ON v.i = g % $9::int`,
    [
      o.sessions,
      o.personStride,
      o.people,
      o.tasks,
      Math.ceil(o.turns / 2),
      o.spacing,
      o.guilds,
      o.abandonEvery,
      o.versions,
    ],
  );
  const agent = (sql: string) => `CASE WHEN k % 2 = 0 THEN ${sql} END`;
  await q(
    `INSERT INTO "Turn" (id, "sessionId", index, role, content, "latencyMs", "promptTokens", "completionTokens", provenance, "createdAt")
    SELECT gen_random_uuid(), s.id, k, CASE WHEN k % 2 = 0 THEN 'agent' ELSE 'human' END::"TurnRole",
      CASE WHEN k % 2 = 0 THEN 'Could you tell me more about ' ELSE 'It should ' END || repeat(md5(s.id::text || k), $2::int),
      ${agent('$3::int + k')}, ${o.provenance ? agent('300 + 40 * k') : 'NULL::int'}, ${o.provenance ? agent('20') : 'NULL::int'}, ${o.provenance ? agent(PROVENANCE) : 'NULL::jsonb'},
      s."startedAt" + k * interval '30 seconds'
    FROM "Session" s CROSS JOIN generate_series(0, $1::int - 1) k`,
    [o.turns, o.textRepeat.turn, o.agentLatencyMs],
  );
  await q(`INSERT INTO "Evaluation" (id, "sessionId", score, success, "testsPassed", "testsTotal", detail, "evaluatorVersion")
    SELECT gen_random_uuid(), s.id, s.reward, s.reward = 1, round(s.reward * 10)::int, 10, ${o.testDetail ? TEST_DETAIL : `'{"tests": []}'::jsonb`},
      'bench' FROM "Session" s WHERE s.status = 'answered'`);
  await q(`INSERT INTO "Rating" (id, "sessionId", "raterId", value, comment)
    SELECT gen_random_uuid(), s.id, s."participantId", 1 + (abs(hashtext(s.id::text)) % 5), 'bench comment' FROM "Session" s WHERE abs(hashtext(s.id::text)) % 2 = 0`);
}
