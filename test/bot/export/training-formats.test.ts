// The TRL and verl training formats against a real Postgres database: every file is read back (JSON lines with
// JSON.parse; Parquet with hyparquet and with arrow-rs through parquet-wasm) and every row is held to the field
// list of the trainer that reads it (TRL's conversational SFT and preference datasets; verl's RLHFDataset in
// verl/utils/dataset/rl_dataset.py and its multi-turn SFT dataset).
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parquetReadObjects } from 'hyparquet';
import { readParquet } from 'parquet-wasm/node';
import { tableFromIPC } from 'apache-arrow';
import { createTestDatabase } from '../../../testing/database.ts';
import { exportSessions, type ExportFormat } from '../../../bot/export/export.ts';
import { ExportError } from '../../../bot/export/prepare.ts';
import type { ActionPair } from '../../../trainer/actor.ts';
import type { PrismaClient } from '../../../prisma/generated/client.ts';
import { seedExportWorld, type Seeded } from './fixtures.ts';

const SALT = 'test-salt-123';
let t: Awaited<ReturnType<typeof createTestDatabase>>;
let prisma: PrismaClient;
let seeded: Seeded;
let dir: string;

beforeAll(async () => {
  t = await createTestDatabase();
  prisma = t.prisma;
  seeded = await seedExportWorld(prisma);
  dir = await mkdtemp(join(tmpdir(), 'sweetloop-training-export-'));
});

afterAll(async () => {
  await t?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

// The field lists, from the trainers' documentation and source (not from our code).
const MESSAGE = ['content', 'role'];
const SFT_FIELDS = ['kind', 'messages', 'policy', 'reward', 'session_id', 'split', 'success', 'task_id'];
const DPO_FIELDS = [
  'agent_turn',
  'chosen',
  'chosen_score',
  'chosen_session_id',
  'pair',
  'prompt',
  'rejected',
  'rejected_score',
  'rejected_session_id',
  'task_id',
];
const VERL_RL_FIELDS = ['ability', 'data_source', 'extra_info', 'prompt', 'reward_model'];
const EXTRA_INFO = [
  'external_id',
  'index',
  'interaction_kwargs',
  'kind',
  'mean_score',
  'sessions',
  'source',
  'split',
  'success_rate',
  'task_id',
  'test_cases',
];
const INTERACTION = ['hidden_information', 'kind', 'max_turns', 'name', 'task_id', 'test_cases'];

const plain = (x: unknown) => JSON.parse(JSON.stringify(x, (_k, v) => (typeof v === 'bigint' ? Number(v) : v)));
const readJsonl = (path: string): Record<string, any>[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

/** Rows of a Parquet file as arrow-rs reads them (nulls kept), after checking hyparquet reads the same values. */
async function readParquetRows(path: string): Promise<{ columns: string[]; rows: Record<string, any>[] }> {
  const bytes = readFileSync(path);
  const table = tableFromIPC(readParquet(new Uint8Array(bytes)).intoIPCStream());
  const rows = plain(table.toArray().map((r) => r.toJSON())) as Record<string, any>[];
  const viaHyparquet = plain(
    await parquetReadObjects({ file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) }),
  ) as Record<string, any>[];
  // hyparquet leaves null struct fields out; arrow writes them as null: the same data.
  const dropNulls = (x: unknown): unknown =>
    Array.isArray(x)
      ? x.map(dropNulls)
      : x && typeof x === 'object'
        ? Object.fromEntries(
            Object.entries(x)
              .filter(([, v]) => v !== null)
              .map(([k, v]) => [k, dropNulls(v)]),
          )
        : x;
  expect(dropNulls(viaHyparquet)).toEqual(dropNulls(rows));
  return { columns: table.schema.fields.map((f) => f.name), rows };
}

const isMessages = (m: unknown) => {
  expect(Array.isArray(m)).toBe(true);
  for (const x of m as Record<string, unknown>[]) {
    expect(Object.keys(x).sort()).toEqual(MESSAGE);
    expect(['system', 'user', 'assistant']).toContain(x.role);
    expect(typeof x.content).toBe('string');
  }
};

async function run(format: ExportFormat, extra: Record<string, unknown> = {}) {
  const out = join(dir, `${format}-${Math.random().toString(36).slice(2)}`);
  const r = await exportSessions(prisma, { format, salt: SALT, filters: { source: 'both' }, ...extra }, out);
  return { out, r, card: readFileSync(`${out}.README.md`, 'utf8') };
}

const secrets = () => Object.values(seeded.tasks).flatMap((x) => [x.reference, ...(x.testCases ?? [])]);

describe('trl-sft', () => {
  it('writes one conversation a session, held to the field list, nothing hidden in it', async () => {
    const { out, r, card } = await run('trl-sft');
    const rows = readJsonl(out);
    // S10 is answered without an evaluation: still a conversation (reward null).
    expect(rows.map((x) => x.session_id).sort()).toEqual(
      [seeded.sessions.S1, seeded.sessions.S10, seeded.sessions.S2, seeded.sessions.S3, seeded.sessions.S8].sort(),
    );
    expect(r.sessions).toBe(5);
    for (const row of rows) {
      expect(Object.keys(row).sort()).toEqual(SFT_FIELDS);
      isMessages(row.messages);
      expect(row.messages.map((m: { role: string }) => m.role)).toEqual([
        'system',
        'user',
        'assistant',
        'user',
        'assistant',
      ]);
      for (const s of secrets()) expect(JSON.stringify(row.messages)).not.toContain(s);
    }
    const s1 = rows.find((x) => x.session_id === seeded.sessions.S1)!;
    expect(s1.messages[1].content).toBe(seeded.tasks.T1!.description);
    // The agent's raw generation is what SFT trains on; the system notice is not in the dialogue.
    expect(s1.messages[2].content).toBe('THINKING... What should f return for negative x?');
    expect(s1.messages[3].content).toBe('alice: add one, always.');
    expect(s1).toMatchObject({ reward: 1, success: true, kind: 'backend', split: 'train', policy: 'starter' });
    expect(card).toContain('load_dataset("json"');
    expect(card).toContain('SFTTrainer');
  });
});

describe('trl-dpo', () => {
  it("pairs whole sessions by the trainer's rule and a run's candidates per turn, every row held to the field list", async () => {
    const pairs: (ActionPair | Omit<ActionPair, 'chosenText' | 'rejectedText'>)[] = [
      {
        sessionId: seeded.sessions.S2!,
        agentTurn: 1,
        chosenPrompt: [1],
        rejectedPrompt: [1],
        chosen: [5, 6],
        rejected: [7],
        chosenText: 'Is x ever negative?',
        rejectedText: 'ok',
        refChosen: -3,
        refRejected: -2,
        chosenScore: 0.4,
        rejectedScore: -0.1,
      },
      // Collected before texts were kept: counted, not written.
      {
        sessionId: seeded.sessions.S2!,
        agentTurn: 0,
        chosenPrompt: [1],
        rejectedPrompt: [1],
        chosen: [5],
        rejected: [7],
        refChosen: -1,
        refRejected: -2,
        chosenScore: 0.2,
        rejectedScore: 0.1,
      },
      // A session outside the selection.
      {
        sessionId: '00000000-0000-4000-8000-000000000000',
        agentTurn: 0,
        chosenPrompt: [1],
        rejectedPrompt: [1],
        chosen: [5],
        rejected: [7],
        chosenText: 'a',
        rejectedText: 'b',
        refChosen: -1,
        refRejected: -2,
        chosenScore: 0.2,
        rejectedScore: 0.1,
      },
    ];
    const file = join(dir, 'actor-pairs.jsonl');
    await writeFile(file, JSON.stringify({ state: 0, pairs }) + '\n');
    const { out, card } = await run('trl-dpo', { candidates: file });
    const rows = readJsonl(out);
    for (const row of rows) {
      expect(Object.keys(row).sort()).toEqual(DPO_FIELDS);
      for (const k of ['prompt', 'chosen', 'rejected']) isMessages(row[k]);
      for (const s of secrets()) expect(JSON.stringify([row.prompt, row.chosen, row.rejected])).not.toContain(s);
    }
    const trajectory = rows.filter((x) => x.pair === 'trajectory');
    // T1: S1 (score 1) against S8 (0.2); S10 has no evaluation. T2 and T3 have one evaluated session each.
    expect(trajectory.map((x) => [x.chosen_session_id, x.rejected_session_id])).toEqual([
      [seeded.sessions.S1, seeded.sessions.S8],
    ]);
    const [p] = trajectory;
    expect(p).toMatchObject({ chosen_score: 1, rejected_score: 0.2, agent_turn: null, task_id: seeded.tasks.T1!.id });
    expect(p!.prompt.map((m: { role: string }) => m.role)).toEqual(['system', 'user']);
    expect(p!.chosen.map((m: { role: string }) => m.role)).toEqual(['assistant', 'user', 'assistant']);
    expect(p!.rejected[1].content).toBe('sim: add one, always.');
    const turn = rows.filter((x) => x.pair === 'turn');
    expect(turn).toHaveLength(1);
    expect(turn[0]).toMatchObject({
      agent_turn: 1,
      chosen: [{ role: 'assistant', content: 'Is x ever negative?' }],
      rejected: [{ role: 'assistant', content: 'ok' }],
      chosen_score: 0.4,
      rejected_score: -0.1,
      chosen_session_id: seeded.sessions.S2,
      rejected_session_id: seeded.sessions.S2,
    });
    // The state before agent turn 1: the opening, the agent's first message and the collaborator's reply.
    expect(turn[0]!.prompt.map((m: { role: string }) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(card).toContain('trajectory pairs: 1; turn pairs: 1');
    expect(card).toContain(
      'candidate pairs not written: 1 (session or turn not in the selection), 1 (the run kept token ids only)',
    );
    expect(card).toContain('its loss covers the whole completion, user turns included');
    expect(card).toContain('DPOTrainer');
    expect(card).toContain('load_dataset("json"');
  });

  it("refuses candidates that are not a run's pairs, and candidates with another format", async () => {
    await expect(run('trl-dpo', { candidates: join(dir, 'missing.jsonl') })).rejects.toThrow(ExportError);
    await expect(run('trl-sft', { candidates: join(dir, 'actor-pairs.jsonl') })).rejects.toThrow(
      /--candidates adds per-turn pairs/,
    );
    await expect(run('trl-dpo', { candidates: '00000000-0000-4000-8000-000000000000' })).rejects.toThrow(
      /no training run/,
    );
  });
});

describe('verl-rl', () => {
  it("writes one row per task with verl's fields, the reference and tests only in reward_model and extra_info", async () => {
    const { out, card } = await run('verl-rl');
    const { columns, rows } = await readParquetRows(out);
    expect(columns).toEqual(['data_source', 'prompt', 'ability', 'reward_model', 'extra_info']);
    expect(rows.map((x) => x.extra_info.task_id).sort()).toEqual(
      [seeded.tasks.T1!.id, seeded.tasks.T2!.id, seeded.tasks.T3!.id].sort(),
    );
    expect(rows.map((x) => x.extra_info.index).sort()).toEqual([0, 1, 2]);
    for (const row of rows) {
      expect(Object.keys(row).sort()).toEqual(VERL_RL_FIELDS);
      expect(Object.keys(row.extra_info).sort()).toEqual(EXTRA_INFO);
      expect(Object.keys(row.extra_info.interaction_kwargs).sort()).toEqual(INTERACTION);
      expect(Object.keys(row.reward_model).sort()).toEqual(['ground_truth', 'style']);
      isMessages(row.prompt);
      expect(row.prompt.map((m: { role: string }) => m.role)).toEqual(['system', 'user']);
      const task = Object.values(seeded.tasks).find((x) => x.id === row.extra_info.task_id)!;
      expect(row.prompt[1].content).toBe(task.description);
      for (const s of [task.reference, ...(task.testCases ?? [])]) expect(JSON.stringify(row.prompt)).not.toContain(s);
      expect(row.reward_model).toEqual({ style: 'rule', ground_truth: task.reference });
      expect(row.extra_info.interaction_kwargs).toMatchObject({
        name: 'sweetloop_collaborator',
        hidden_information: task.reference,
        max_turns: 10,
      });
      expect(row.extra_info.test_cases).toEqual(task.testCases);
      expect(row.data_source).toBe(`sweetloop/colbench-${row.extra_info.kind}`);
    }
    const t1 = rows.find((x) => x.extra_info.task_id === seeded.tasks.T1!.id)!;
    // S1, S10 and S8 are T1's selected sessions; S1 (1.0) and S8 (0.2) were evaluated.
    expect(t1.extra_info).toMatchObject({
      sessions: 3,
      mean_score: 0.6,
      success_rate: 0.5,
      split: 'train',
      source: 'builtin',
      external_id: 'T1',
    });
    expect(card).toContain('load_dataset("parquet"');
    expect(card).toContain('verl.trainer.main_ppo');
  });
});

describe('verl-sft', () => {
  it('writes one conversation a session as Parquet messages', async () => {
    const { out, card } = await run('verl-sft');
    const { columns, rows } = await readParquetRows(out);
    expect([...columns].sort()).toEqual(SFT_FIELDS);
    expect(rows).toHaveLength(5);
    for (const row of rows) {
      isMessages(row.messages);
      expect(row.messages.at(-1).role).toBe('assistant');
      for (const s of secrets()) expect(JSON.stringify(row.messages)).not.toContain(s);
    }
    expect(card).toContain('load_dataset("parquet"');
    expect(card).toContain('verl.trainer.fsdp_sft_trainer');
    expect(card).toContain('data.multiturn.messages_key=messages');
  });
});
