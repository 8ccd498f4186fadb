// Each exported session carries the version of its study's consent text the person had accepted when it started,
// in every format: a person accepts version 1 and plays a session, the text changes to version 2, they accept it
// and play another; the rows say 1 and 2. Sessions are started by the engine (admission, bot/assign.ts) on real
// Postgres, as the bot starts them; a text changed between admission and assignment is read before a session
// starts.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { createRuntime, type Runtime } from '../../../bot/runtime.ts';
import { exportSessions } from '../../../bot/export/export.ts';
import type { SweetRlTrajectory } from '../../../bot/export/sweet-rl.ts';
import type { ExportRecord } from '../../../bot/export/record.ts';
import { builtinTasks } from '../../../tasks/library.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import { appendAgentTurn } from '../../../prisma/session-store.ts';
import { recordEvaluation } from '../../../prisma/evaluation-store.ts';
import { createStudy, setStudyConsent, type StudyWithArms } from '../../../prisma/study-store.ts';
import { scriptedAgent } from '../discord/harness.ts';

const SALT = 'consent-version-salt';
let t: TestDatabase;
let rt: Runtime;
let dir: string;
let study: StudyWithArms;

const person = { externalId: '930000000000000001', displayName: 'Ada' };

/** Starts a session for `who` through the engine and finishes it (answered, evaluated). */
async function play(who: typeof person, score: number): Promise<string> {
  const started = await rt.engine.start(who, 'backend');
  const answer = 'def f():\n    return 1';
  await appendAgentTurn(
    t.prisma,
    started.sessionId,
    { content: `I WANT TO ANSWER:\n${answer}`, rawOutput: `I WANT TO ANSWER:\n${answer}` },
    { answer, endReason: 'answered' },
  );
  await recordEvaluation(
    t.prisma,
    started.sessionId,
    { score, success: score === 1, testsPassed: 1, testsTotal: 1, detail: {}, evaluatorVersion: 'test' },
    0,
  );
  return started.sessionId;
}

beforeAll(async () => {
  t = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'sweetloop-consent-version-'));
  await importTasks(t.prisma, builtinTasks({ kind: 'backend', split: 'train' }).slice(0, 3));
  const pv = await t.prisma.policyVersion.create({
    data: { name: 'arm', algorithm: 'external', checkpointPath: '/x', checkpointSha256: '0' },
  });
  study = await createStudy(
    t.prisma,
    'cli',
    {
      name: 'consented',
      kind: 'backend',
      split: 'train',
      perTask: 1,
      seed: 4,
      taskIds: (await t.prisma.task.findMany()).map((x) => x.id),
      arms: [{ policyVersionId: pv.id, share: 100 }],
      consentText: 'Version one of the text.',
      payPerSessionCents: null,
      bonusSuccessCents: null,
      currency: null,
      maxSessionsPerPerson: null,
      opensAt: null,
      closesAt: null,
      guildIds: [],
      channelIds: [],
    },
    { requireConsent: true },
  );
  rt = await createRuntime({
    channel: 'discord',
    db: t.db,
    maxTurns: 3,
    idleMinutes: 30,
    loadAgent: async () => scriptedAgent('scripted', () => 'Could you tell me more?'),
    render: null,
    policyPollMs: 60_000,
    // Nothing here should be advanced by the sweep while the test writes the sessions' turns itself.
    overdueMs: 600_000,
  });
}, 120_000);

afterAll(async () => {
  await rt?.close();
  await t?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the consent version of each exported session', () => {
  let first: string;
  let second: string;

  it('is the version accepted when the session started, stored at admission', async () => {
    expect(await rt.engine.admission(person)).toMatchObject({ needsConsent: true, consent: { version: 1 } });
    await rt.engine.acceptConsent(person, { studyId: study.id, version: 1 });
    first = await play(person, 1);
    await setStudyConsent(t.prisma, 'cli', study.name, 'Version two of the text.');
    // The new text is asked for before the next session.
    expect(await rt.engine.admission(person)).toMatchObject({ needsConsent: true, consent: { version: 2 } });
    await expect(rt.engine.start(person, 'backend')).rejects.toMatchObject({ reason: 'no-consent' });
    await rt.engine.acceptConsent(person, { studyId: study.id, version: 2 });
    second = await play(person, 0.5);
    const rows = await t.prisma.session.findMany({
      where: { id: { in: [first, second] } },
      select: { id: true, consentVersion: true },
    });
    expect(Object.fromEntries(rows.map((r) => [r.id, r.consentVersion]))).toEqual({ [first]: 1, [second]: 2 });
  });

  it('is carried by jsonl, parquet and sweet-rl rows alike', async () => {
    const byFormat: Record<string, (number | null)[]> = {};
    for (const format of ['jsonl', 'parquet', 'sweet-rl'] as const) {
      const path = join(dir, `export.${format}`);
      const r = await exportSessions(t.prisma, { format, salt: SALT, study: study.name }, path);
      expect(r.sessions).toBe(2);
      if (format === 'jsonl') {
        const rows = readFileSync(path, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as ExportRecord);
        expect(rows.map((x) => x.session.id)).toEqual([first, second]);
        byFormat[format] = rows.map((x) => x.session.consentVersion);
      } else if (format === 'parquet') {
        const b = readFileSync(path);
        const rows = (await parquetReadObjects({
          file: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength),
        })) as { session_id: string; consent_version: number | null }[];
        expect(rows.map((x) => x.session_id)).toEqual([first, second]);
        byFormat[format] = rows.map((x) => x.consent_version);
      } else {
        // k = 1: one block, the tasks in the order of their first session.
        const rows = readFileSync(path, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as SweetRlTrajectory);
        expect(rows.map((x) => x.reward)).toEqual([1, 0.5]);
        byFormat[format] = rows.map((x) => x.consent_version);
        expect(r.cardMarkdown).toMatch(/consent text: version 2 \(current\)/);
      }
    }
    expect(byFormat).toEqual({ jsonl: [1, 2], parquet: [1, 2], 'sweet-rl': [1, 2] });
  });

  it("is null for a session in a study without a text of its own (the bot's notice applied)", async () => {
    const other = { externalId: '930000000000000002', displayName: 'Bo' };
    const console = await createRuntime({
      channel: 'console',
      db: t.db,
      maxTurns: 3,
      idleMinutes: 30,
      loadAgent: async () => scriptedAgent('s', () => 'Hm?'),
      render: null,
      policyPollMs: 60_000,
      overdueMs: 600_000,
    });
    try {
      await t.prisma.policyVersion.create({
        data: {
          name: 'deployed',
          algorithm: 'external',
          checkpointPath: '/x',
          checkpointSha256: '0',
          status: 'deployed',
          deployedAt: new Date(),
        },
      });
      // Close the study so that the person lands in the default study.
      await t.prisma.study.update({ where: { id: study.id }, data: { status: 'closed' } });
      await console.engine.acceptConsent(other);
      const started = await console.engine.start(other, 'backend');
      expect(
        (await t.prisma.session.findUniqueOrThrow({ where: { id: started.sessionId } })).consentVersion,
      ).toBeNull();
    } finally {
      await console.close();
    }
  });
});
