// Exports against a real Postgres database (a throwaway one per file), data inserted through Prisma.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { readParquet } from 'parquet-wasm/node';
import { tableFromIPC } from 'apache-arrow';
import { createTestDatabase } from '../../../testing/database.ts';
import { EmptyExportError, exportSessions, type ExportFormat } from '../../../bot/export/export.ts';
import { FilterError, selectSessionIdPages, type ExportFilters } from '../../../bot/export/query.ts';
import { pseudonymize } from '../../../bot/export/pseudonym.ts';
import { PARQUET_COLUMNS } from '../../../bot/export/parquet.ts';
import type { ExportRecord } from '../../../bot/export/record.ts';
import type { SweetRlTrajectory } from '../../../bot/export/sweet-rl.ts';
import type { PrismaClient } from '../../../prisma/generated/client.ts';
import { IDS, SECRETS, seedExportWorld, type Seeded } from './fixtures.ts';

const SALT = 'test-salt-123';
let t: Awaited<ReturnType<typeof createTestDatabase>>;
let prisma: PrismaClient;
let seeded: Seeded;
let dir: string;

beforeAll(async () => {
  t = await createTestDatabase();
  prisma = t.prisma;
  seeded = await seedExportWorld(prisma);
  dir = await mkdtemp(join(tmpdir(), 'sweetloop-export-'));
});

afterAll(async () => {
  await t?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const names = (ids: string[]) =>
  ids.map((id) => Object.entries(seeded.sessions).find(([, v]) => v === id)?.[0] ?? id).sort();

async function selected(f: ExportFilters, pageSize = 1): Promise<string[]> {
  const out: string[] = [];
  for await (const page of selectSessionIdPages(prisma, f, pageSize)) out.push(...page);
  return names(out);
}

const readJsonl = <T>(path: string): T[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as T);
const plain = (x: unknown) => JSON.parse(JSON.stringify(x, (_k, v) => (typeof v === 'bigint' ? Number(v) : v)));

describe('selection', () => {
  it('defaults to answered, consented, human, unflagged sessions, in start order across pages', async () => {
    expect(await selected({})).toEqual(['S1', 'S10', 'S2', 'S3']);
    // Page size 1 walks the keyset through S1 and S10, which started at the same instant.
    expect(await selected({}, 1)).toEqual(await selected({}, 100));
  });

  it('each filter selects exactly its sessions', async () => {
    expect(await selected({ kind: 'frontend' })).toEqual(['S3']);
    expect(await selected({ kind: 'backend' })).toEqual(['S1', 'S10', 'S2']);
    expect(await selected({ split: 'test' })).toEqual(['S2']);
    expect(await selected({ policy: 'starter' })).toEqual(['S1']);
    const starter = await prisma.policyVersion.findUniqueOrThrow({ where: { name: 'starter' } });
    expect(await selected({ policy: starter.id })).toEqual(['S1']);
    expect(await selected({ policy: 'sweet-0001' })).toEqual(['S10', 'S2', 'S3']);
    expect(
      await selected({ since: new Date('2026-01-02T00:00:00Z'), until: new Date('2026-01-03T12:00:00Z') }),
    ).toEqual(['S2']);
    expect(await selected({ since: new Date('2026-01-02T12:00:00Z') })).toEqual(['S2', 'S3']);
    expect(await selected({ until: new Date('2026-01-01T12:00:00Z') })).toEqual([]);
    // S1's visible ratings are 5 and 4 (mean 4.5); the withdrawn rater's 1 must not drag it below 4.
    expect(await selected({ minRating: 4 })).toEqual(['S1']);
    expect(await selected({ minRating: 4.6 })).toEqual([]);
    expect(await selected({ minRating: 2 })).toEqual(['S1', 'S2']);
    expect(await selected({ source: 'both' })).toEqual(['S1', 'S10', 'S2', 'S3', 'S8']);
    expect(await selected({ includeFlagged: true })).toEqual(['S1', 'S10', 'S2', 'S3', 'S9']);
    expect(await selected({ statuses: ['abandoned'] })).toEqual(['S4']);
    expect(await selected({ requireTrajectory: true })).toEqual(['S1', 'S2', 'S3']);
    expect(await selected({ source: 'simulated' })).toEqual(['S8']);
    // No source named: people only (DEFAULT_DATA_SOURCE, prisma/data-source.ts).
    expect(await selected({})).toEqual(await selected({ source: 'human' }));
    expect(await selected({ kind: 'backend', split: 'test', includeFlagged: true, policy: 'sweet-0001' })).toEqual([
      'S2',
      'S9',
    ]);
  });

  it('never selects unconsented, withdrawn or deleted participants, whatever the filters', async () => {
    const everything = await selected({
      source: 'both',
      includeFlagged: true,
      statuses: ['answered', 'abandoned', 'expired', 'active'],
    });
    expect(everything).toEqual(['S1', 'S10', 'S2', 'S3', 'S4', 'S8', 'S9']);
    for (const hidden of ['S5', 'S6', 'S7']) expect(everything).not.toContain(hidden);
  });

  it('rejects malformed filters with a clear error', async () => {
    await expect(selected({ since: new Date('2026-02-01'), until: new Date('2026-01-01') })).rejects.toThrow(
      /--since must be before --until/,
    );
    await expect(selected({ minRating: 9 })).rejects.toThrow(FilterError);
    await expect(selected({ kind: 'mobile' as never })).rejects.toThrow(/--kind/);
    await expect(selected({ statuses: ['done' as never] })).rejects.toThrow(/unknown status/);
  });
});

describe('formats round-trip', () => {
  it('jsonl carries the full record: turns with timings, evaluation, visible ratings, policy, pseudonyms', async () => {
    const path = join(dir, 'all.jsonl');
    const r = await exportSessions(prisma, { format: 'jsonl', salt: SALT, batchSize: 2 }, path);
    expect(r.sessions).toBe(4);
    expect(r.turns).toBe(16);
    const rows = readJsonl<ExportRecord>(path);
    expect(names(rows.map((x) => x.session.id))).toEqual(['S1', 'S10', 'S2', 'S3']);

    const s1 = rows.find((x) => x.session.id === seeded.sessions.S1)!;
    expect(s1.session).toMatchObject({
      status: 'answered',
      simulated: false,
      reward: 1,
      startedAt: '2026-01-01T12:00:00.000Z',
      durationMs: 600_000,
      answer: 'def f(x): return x + 1',
    });
    expect(s1.task).toEqual({
      id: seeded.tasks.T1!.id,
      kind: 'backend',
      source: 'builtin',
      externalId: 'T1',
      split: 'train',
      problemDescription: seeded.tasks.T1!.description,
      groundTruth: seeded.tasks.T1!.reference,
      testCases: ['fT1(1)', 'fT1(2)', 'fT1(3)'],
    });
    expect(s1.participant).toEqual({ pseudonym: pseudonymize(IDS.alice, SALT), role: 'participant' });
    expect(s1.policyVersion).toMatchObject({ name: 'starter', algorithm: 'starter', status: 'deployed' });
    expect(s1.turns.map((x) => [x.index, x.role, x.offsetMs])).toEqual([
      [0, 'agent', 30_000],
      [1, 'human', 60_000],
      [2, 'system', 90_000],
      [3, 'agent', 120_000],
    ]);
    expect(s1.turns[0]).toMatchObject({
      content: 'What should f return for negative x?',
      rawOutput: 'THINKING... What should f return for negative x?',
      latencyMs: 1200,
      promptTokens: 100,
      completionTokens: 10,
    });
    expect(s1.evaluation).toMatchObject({
      score: 1,
      success: true,
      testsPassed: 3,
      testsTotal: 3,
      evaluatorVersion: 'test-1',
      detail: { note: 'fixture' },
    });
    // Dave withdrew: his rating and comment stay behind.
    expect(s1.ratings.map((x) => [x.rater, x.value, x.comment]).sort()).toEqual(
      [
        [pseudonymize(IDS.alice, SALT), 5, 'great helper'],
        [pseudonymize(IDS.bob, SALT), 4, null],
      ].sort(),
    );
    expect(s1.ratingMean).toBe(4.5);
    const s10 = rows.find((x) => x.session.id === seeded.sessions.S10)!;
    expect(s10.flags).toEqual([expect.objectContaining({ reason: 'checked, fine' })]);
    expect(s10.evaluation).toBeNull();
    expect(readFileSync(r.cardPath!, 'utf8')).toBe(r.cardMarkdown);
  });

  it('sweet-rl writes the reference trajectory shape, one task kind per file', async () => {
    await expect(exportSessions(prisma, { format: 'sweet-rl', salt: SALT }, join(dir, 'mixed.jsonl'))).rejects.toThrow(
      /holds backend and frontend sessions.*add --kind backend or --kind frontend/,
    );
    expect(existsSync(join(dir, 'mixed.jsonl'))).toBe(false);
    const path = join(dir, 'all.sweet-rl.jsonl');
    const r = await exportSessions(prisma, { format: 'sweet-rl', salt: SALT, filters: { kind: 'backend' } }, path);
    const rows = readJsonl<SweetRlTrajectory>(path);
    // S10 has no evaluation, so it cannot be a training trajectory.
    expect(r.sessions).toBe(2);
    expect(rows).toHaveLength(2);
    const first = rows[0]!;
    expect(Object.keys(first).sort()).toEqual([
      'answer',
      'consent_version',
      'dialogue_history',
      'reward',
      'session_id',
      'task',
    ]);
    expect(first.task).toEqual({
      problem_description: seeded.tasks.T1!.description,
      ground_truth: seeded.tasks.T1!.reference,
      test_cases: { test1: 'fT1(1)', test2: 'fT1(2)', test3: 'fT1(3)' },
    });
    expect(first.dialogue_history.map((e) => [e.role, e.content, 'output' in e ? e.output : undefined])).toEqual([
      ['user', seeded.tasks.T1!.description, undefined],
      ['assistant', 'What should f return for negative x?', 'THINKING... What should f return for negative x?'],
      ['user', 'alice: add one, always.', undefined],
      ['assistant', 'I WANT TO ANSWER: def f(x): return x + 1', 'I WANT TO ANSWER: def f(x): return x + 1'],
    ]);
    for (const e of first.dialogue_history)
      if (e.role === 'assistant')
        expect(e.input).toMatch(/^<\|begin_of_text\|>[^]*<\|start_header_id\|>assistant<\|end_header_id\|>\n\n$/);
    expect(first.answer).toBe('def f(x): return x + 1');
    expect(rows.map((x) => x.reward)).toEqual([1, 0.5]);
    expect(r.cardMarkdown).toMatch(/sweetloop-sweet-rl\/3/);
  });

  it('parquet reads back identically through hyparquet and through arrow-rs (parquet-wasm), one row group per batch', async () => {
    const jsonlPath = join(dir, 'ref.jsonl');
    await exportSessions(
      prisma,
      { format: 'jsonl', salt: SALT, filters: { source: 'both', includeFlagged: true } },
      jsonlPath,
    );
    const expected = readJsonl<ExportRecord>(jsonlPath);
    const path = join(dir, 'all.parquet');
    const r = await exportSessions(
      prisma,
      { format: 'parquet', salt: SALT, batchSize: 2, filters: { source: 'both', includeFlagged: true } },
      path,
    );
    expect(r.sessions).toBe(6);
    const bytes = readFileSync(path);
    const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    const meta = parquetMetadata(file);
    expect(Number(meta.num_rows)).toBe(6);
    expect(meta.row_groups).toHaveLength(3);

    const viaHyparquet = plain(await parquetReadObjects({ file })) as Record<string, unknown>[];
    const table = tableFromIPC(readParquet(new Uint8Array(bytes)).intoIPCStream());
    expect(table.schema.fields.map((f) => f.name)).toEqual(PARQUET_COLUMNS);
    expect(String(table.schema.fields.find((f) => f.name === 'turns')!.type)).toMatch(
      /^List<Struct<\{index:Int32, role:Utf8, content:Utf8/,
    );
    const viaArrow = plain(table.toArray().map((row) => row.toJSON())) as Record<string, unknown>[];

    for (const rows of [viaHyparquet, viaArrow]) {
      expect(rows).toHaveLength(expected.length);
      rows.forEach((row, i) => {
        const e = expected[i]!;
        const ms = (v: unknown) => (typeof v === 'number' ? v : new Date(v as string).getTime());
        expect(row.session_id).toBe(e.session.id);
        expect(ms(row.started_at)).toBe(Date.parse(e.session.startedAt));
        expect(row.reward).toBe(e.session.reward);
        expect(row.problem_description).toBe(e.task.problemDescription);
        expect(row.test_cases ?? null).toEqual(e.task.testCases);
        expect(row.participant).toBe(e.participant.pseudonym);
        expect(row.policy_name).toBe(e.policyVersion?.name ?? null);
        expect(row.score).toBe(e.evaluation?.score ?? null);
        expect(row.success).toBe(e.evaluation?.success ?? null);
        expect(row.evaluation_detail === null ? null : JSON.parse(row.evaluation_detail as string)).toEqual(
          e.evaluation?.detail ?? null,
        );
        expect(row.rating_mean).toBe(e.ratingMean);
        expect(row.flagged).toBe(e.flags.some((f) => f.resolvedAt === null));
        expect(
          (row.ratings as { rater: string; value: number; comment: string | null }[]).map((x) => [
            x.rater,
            x.value,
            x.comment,
          ]),
        ).toEqual(e.ratings.map((x) => [x.rater, x.value, x.comment]));
        const turns = row.turns as Record<string, unknown>[];
        expect(
          turns.map((x) => [
            x.index,
            x.role,
            x.content,
            x.raw_output,
            x.latency_ms,
            x.prompt_tokens,
            x.offset_ms,
            ms(x.created_at),
          ]),
        ).toEqual(
          e.turns.map((x) => [
            x.index,
            x.role,
            x.content,
            x.rawOutput,
            x.latencyMs,
            x.promptTokens,
            x.offsetMs,
            Date.parse(x.createdAt),
          ]),
        );
      });
    }
  });

  it('parquet of a frontend-only selection (all-null test cases and test counts) reads back through arrow-rs', async () => {
    const path = join(dir, 'frontend.parquet');
    const r = await exportSessions(prisma, { format: 'parquet', salt: SALT, filters: { kind: 'frontend' } }, path);
    expect(r.sessions).toBe(1);
    const rows = plain(
      tableFromIPC(readParquet(new Uint8Array(readFileSync(path))).intoIPCStream())
        .toArray()
        .map((x) => x.toJSON()),
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      kind: 'frontend',
      test_cases: null,
      tests_passed: null,
      score: 0.8,
      metric: 'pixel-ssim',
      ratings: [],
    });
  });

  it('an empty selection is refused with the filter that left no session, and nothing is written', async () => {
    for (const format of ['jsonl', 'sweet-rl', 'parquet', 'hf'] as ExportFormat[]) {
      const path = join(dir, `refused.${format}`);
      const err = await exportSessions(
        prisma,
        { format, salt: SALT, filters: { kind: 'backend', until: new Date('2020-01-01') } },
        path,
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EmptyExportError);
      // Each filter with what it left, up to the one that left none.
      expect((err as Error).message).toMatch(
        /nothing to export: 10 session\(s\) stored; 7 of consented[^;]*; 6 with status answered[^;]*; 5 played by people \(--source human\); 0 started before 2020-01-01T00:00:00.000Z \(--until\)/,
      );
      expect((err as Error).message).not.toMatch(/--kind/);
      expect(existsSync(path)).toBe(false);
      expect(existsSync(`${path}.README.md`)).toBe(false);
    }
    // k-blocks: no task has 50 sessions.
    const blocks = await exportSessions(
      prisma,
      { format: 'sweet-rl', salt: SALT, filters: { kind: 'backend', perTask: 50 } },
      join(dir, 'k50.jsonl'),
    ).catch((e: unknown) => e);
    expect((blocks as Error).message).toMatch(
      /; 3 scored, with at least one agent turn[^;]*; 2 without an unresolved moderation flag[^;]*; 0 in tasks with at least 50 such sessions \(--per-task 50\)/,
    );
  });

  it('an empty selection with allowEmpty gives valid, empty files whose card says why and describes no blocks', async () => {
    for (const format of ['jsonl', 'sweet-rl', 'parquet'] as ExportFormat[]) {
      const path = join(dir, `empty.${format}`);
      const r = await exportSessions(
        prisma,
        {
          format,
          salt: SALT,
          allowEmpty: true,
          filters: { until: new Date('2020-01-01'), ...(format === 'sweet-rl' ? { kind: 'backend', perTask: 3 } : {}) },
        },
        path,
      );
      expect(r.sessions).toBe(0);
      expect(r.empty).toMatch(/0 started before 2020/);
      expect(r.cardMarkdown).toMatch(/- the file is empty: .*0 started before 2020/);
      if (format === 'sweet-rl') {
        expect(r.cardMarkdown).toMatch(/- blocks: none \(the file is empty\)/);
        expect(r.cardMarkdown).not.toMatch(/line i and line i \+/);
        expect(r.cardMarkdown).not.toMatch(/evaluate_code\.py/);
      }
      if (format === 'parquet') {
        const bytes = readFileSync(path);
        const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
        expect(await parquetReadObjects({ file })).toEqual([]);
        expect(Number(parquetMetadata(file).num_rows)).toBe(0);
        // Not read through parquet-wasm here: hyparquet-writer encodes the footer's empty row-group list with a
        // BYTE element type, which pyarrow's reader accepts and arrow-rs's strict thrift decoder rejects.
      } else expect(readFileSync(path, 'utf8')).toBe('');
      expect(r.cardMarkdown).toMatch(/- sessions: 0\n/);
    }
  });

  it('writes to a stream (as /mod export does) and ends it', async () => {
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (c: Buffer) => chunks.push(c));
    const r = await exportSessions(prisma, { format: 'sweet-rl', salt: SALT, filters: { kind: 'backend' } }, out);
    expect(out.writableEnded).toBe(true);
    const lines = Buffer.concat(chunks).toString('utf8').trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(r.sessions).toBe(2);
    expect(r.cardMarkdown).toMatch(/- task kind: backend/);
    // Frontend answers are screenshot files beside the export, which a stream has no place for.
    await expect(
      exportSessions(prisma, { format: 'sweet-rl', salt: SALT, filters: { kind: 'frontend' } }, new PassThrough()),
    ).rejects.toThrow(/export to a file path/);
  });
});

describe('privacy', () => {
  const everything: ExportFilters = {
    source: 'both',
    includeFlagged: true,
    statuses: ['answered', 'abandoned', 'expired', 'active'],
  };

  it('unconsented, withdrawn and deleted people never appear, nor any Discord id or display name', async () => {
    for (const format of ['jsonl', 'sweet-rl', 'parquet'] as ExportFormat[]) {
      const path = join(dir, `privacy.${format}`);
      // One task kind per sweet-rl file: the backend sessions carry every case here.
      await exportSessions(
        prisma,
        {
          format,
          salt: SALT,
          filters: { ...everything, ...(format === 'sweet-rl' ? { kind: 'backend' as const } : {}) },
        },
        path,
      );
      let text: string;
      if (format === 'parquet') {
        const bytes = readFileSync(path);
        text = JSON.stringify(
          plain(
            await parquetReadObjects({
              file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
            }),
          ),
        );
      } else text = readFileSync(path, 'utf8');
      expect(text.length).toBeGreaterThan(100);
      for (const secret of [
        ...SECRETS,
        ...Object.values(IDS).filter((id) => /^\d+$/.test(id)),
        'DISPLAY',
        '999999999999999999',
        'thread-',
      ]) {
        expect(text, `${format} leaks ${secret}`).not.toContain(secret);
      }
      for (const person of ['carol', 'dave', 'erin'] as const)
        expect(text).not.toContain(pseudonymize(IDS[person], SALT));
    }
  });

  it('--exclude-comments drops rating comments and moderation reasons', async () => {
    const path = join(dir, 'nocomments.jsonl');
    const r = await exportSessions(
      prisma,
      { format: 'jsonl', salt: SALT, excludeComments: true, filters: everything },
      path,
    );
    const text = readFileSync(path, 'utf8');
    for (const comment of ['great helper', 'rude language', 'checked, fine']) expect(text).not.toContain(comment);
    const rows = readJsonl<ExportRecord>(path);
    expect(rows.flatMap((x) => x.ratings).length).toBe(3); // the ratings themselves stay
    expect(r.cardMarkdown).toMatch(/free-text comments: excluded/);
  });

  it('pseudonyms are stable per salt and differ across salts', async () => {
    const pseudonymsWith = async (salt: string, name: string) => {
      const path = join(dir, name);
      await exportSessions(prisma, { format: 'jsonl', salt }, path);
      return readJsonl<ExportRecord>(path).map((x) => x.participant.pseudonym);
    };
    const a1 = await pseudonymsWith('salt-number-one', 'a1.jsonl');
    const a2 = await pseudonymsWith('salt-number-one', 'a2.jsonl');
    const b = await pseudonymsWith('salt-number-two', 'b.jsonl');
    expect(a1).toEqual(a2);
    expect(new Set(a1).size).toBe(2); // alice and bob
    for (let i = 0; i < a1.length; i++) expect(b[i]).not.toBe(a1[i]);
    expect(new Set(a1)).toEqual(
      new Set([pseudonymize(IDS.alice, 'salt-number-one'), pseudonymize(IDS.bob, 'salt-number-one')]),
    );
  });
});

describe('dataset card and failures', () => {
  it('lists the right counts and the filters used', async () => {
    const path = join(dir, 'card.parquet');
    const r = await exportSessions(prisma, { format: 'parquet', salt: SALT, filters: { source: 'both' } }, path);
    const card = readFileSync(`${path}.README.md`, 'utf8');
    // S1, S10, S2, S3 and the simulated S8: 5 sessions, 4 turns each, S4 abandoned is not answered.
    expect(card).toMatch(/- sessions: 5\n/);
    expect(card).toMatch(/- turns: 20 \(agent 10, human 5, system 5\)/);
    expect(card).toMatch(/- participants: 3 \(pseudonymous\)/);
    expect(card).toMatch(/- human ratings: 3 from 2 raters; distribution 1-5: 0 \/ 1 \/ 0 \/ 1 \/ 1/);
    expect(card).toMatch(/- evaluated sessions: 4; successes: 1/);
    expect(card).toMatch(/- simulated sessions: 1/);
    expect(card).toMatch(/\| backend \| 4 \|/);
    expect(card).toMatch(/\| frontend \| 1 \|/);
    expect(card).toMatch(/\| starter \| 2 \|/);
    expect(card).toMatch(/\| sweet-0001 \| 3 \|/);
    expect(card).toMatch(/- collaborators: people and simulators/);
    expect(card).toMatch(/\| human \| 4 \|/);
    expect(card).toMatch(/\| simulated \| 1 \|/);
    expect(card).toMatch(/## Collection protocol/);
    expect(card).toMatch(/## Pseudonymisation/);
    expect(card).toMatch(/## Licence/);
    expect(card).toContain('`turns`');
    expect(r.stats.sessions).toBe(5);
  });

  it('bad input leaves no file behind and a clear error', async () => {
    const path = join(dir, 'bad.jsonl');
    await expect(
      exportSessions(
        prisma,
        { format: 'jsonl', salt: SALT, filters: { since: new Date('2026-02-01'), until: new Date('2026-01-01') } },
        path,
      ),
    ).rejects.toThrow(FilterError);
    await expect(exportSessions(prisma, { format: 'csv' as never, salt: SALT }, path)).rejects.toThrow(
      /unknown format "csv"/,
    );
    await expect(exportSessions(prisma, { format: 'jsonl', salt: 'short' }, path)).rejects.toThrow(
      /at least 8 characters/,
    );
    await expect(
      exportSessions(prisma, { format: 'jsonl', salt: SALT, filters: { policy: 'sweet-9999' } }, path),
    ).rejects.toThrow(
      /--policy: No policy version named "sweet-9999"\. Recent versions: sweet-0001, starter \(or starter, deployed\)/,
    );
    await expect(
      exportSessions(prisma, { format: 'jsonl', salt: SALT }, join(dir, 'no', 'such', 'dir.jsonl')),
    ).rejects.toThrow(/ENOENT.*no\/such\/dir\.jsonl\.partial/);
    expect(existsSync(path)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.endsWith('.partial'))).toEqual([]);
  });
});
