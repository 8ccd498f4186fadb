// The sweet-rl export checked against what facebookresearch/sweet_rl's scripts need (see bot/export/sweet-rl.ts),
// the Hugging Face dataset folder checked against its own Parquet files with arrow-rs (parquet-wasm), and the
// export /mod export runs. Real Postgres; simulated sessions stored as simulated games are.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { readParquet } from 'parquet-wasm/node';
import { tableFromIPC, type DataType, type Field } from 'apache-arrow';
import { createTestDatabase } from '../../../testing/database.ts';
import { exportSessions } from '../../../bot/export/export.ts';
import { exportForModerator, parseExportRequest } from '../../../bot/export/options.ts';
import { resolveChatTemplate } from '../../../bot/export/chat-template.ts';
import type { SweetRlTrajectory } from '../../../bot/export/sweet-rl.ts';
import { pipelineCommands } from '../../../bot/export/official-pipeline.ts';
import { buildDialogue, COLLABORATOR_REPLY_CAP } from '../../../tasks/protocol.ts';
import { Renderer } from '../../../tasks/render.ts';
import type { PrismaClient } from '../../../prisma/generated/client.ts';
import { LONG_REPLY, seedSimulatedWorld, type SimulatedWorld } from './simulated-world.ts';

const SALT = 'official-format-salt';
let t: Awaited<ReturnType<typeof createTestDatabase>>;
let prisma: PrismaClient;
let world: SimulatedWorld;
let dir: string;

beforeAll(async () => {
  t = await createTestDatabase();
  prisma = t.prisma;
  world = await seedSimulatedWorld(prisma);
  dir = await mkdtemp(join(tmpdir(), 'sweetloop-official-'));
});

afterAll(async () => {
  await t?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const readJsonl = (path: string): SweetRlTrajectory[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as SweetRlTrajectory);

describe('sweet-rl export for the official scripts', () => {
  it('three tasks, two simulated sessions each: k blocks, inputs, outputs, caps, rewards', async () => {
    const path = join(dir, 'backend.jsonl');
    const r = await exportSessions(
      prisma,
      {
        format: 'sweet-rl',
        salt: SALT,
        filters: { kind: 'backend', source: 'simulated', perTask: 2, statuses: ['answered', 'abandoned'] },
      },
      path,
    );
    const rows = readJsonl(path);
    // B4 has one simulated session (its second is a person's), the abandoned B1 session has no evaluation.
    expect(rows).toHaveLength(6);
    expect(r.sessions).toBe(6);

    // evaluate_code.py's own check: with k = 2, line i and line i + num_tasks describe the same task.
    const k = 2;
    const numTasks = rows.length / k;
    for (let i = 0; i < rows.length - numTasks; i++)
      expect(rows[i]!.task.problem_description).toBe(rows[i + numTasks]!.task.problem_description);
    const key = (x: SweetRlTrajectory) =>
      Object.values(world.tasks).find((w) => w.description === x.task.problem_description)!.key;
    expect(rows.map(key)).toEqual(['B1', 'B2', 'B3', 'B1', 'B2', 'B3']);
    // Block j holds each task's j-th session by start.
    const ids = [
      world.sessions.B1![0],
      world.sessions.B2![0],
      world.sessions.B3![0],
      world.sessions.B1![1],
      world.sessions.B2![1],
      world.sessions.B3![1],
    ];
    const scores = await Promise.all(
      ids.map(async (id) => (await prisma.evaluation.findUniqueOrThrow({ where: { sessionId: id! } })).score),
    );
    expect(rows.map((x) => x.reward)).toEqual(scores);

    const template = resolveChatTemplate('llama3').formatter;
    for (const row of rows) {
      const task = Object.values(world.tasks).find((w) => w.description === row.task.problem_description)!;
      expect(row.task).toEqual({
        problem_description: task.description,
        ground_truth: task.reference,
        test_cases: { test1: task.testCases![0], test2: task.testCases![1], test3: task.testCases![2] },
      });
      const h = row.dialogue_history;
      expect(h[0]).toEqual({ role: 'user', content: task.description });
      expect(h.at(-1)!.role).toBe('assistant');
      expect(row.reward).toBeGreaterThanOrEqual(0);
      expect(row.reward).toBeLessThanOrEqual(1);
      const played: { role: 'agent' | 'human'; content: string }[] = [];
      h.slice(1).forEach((e, i) => {
        expect(e.role).toBe(i % 2 === 0 ? 'assistant' : 'user');
        if (e.role === 'user') {
          expect(Object.keys(e).sort()).toEqual(['content', 'role']);
          expect(e.content.length).toBeLessThanOrEqual(COLLABORATOR_REPLY_CAP.backend);
          played.push({ role: 'human', content: e.content });
        } else {
          expect(typeof e.output).toBe('string');
          // What the agent was sent: the protocol's dialogue so far, rendered with the Llama-3.1 template.
          const expected = template.format(buildDialogue({ kind: 'backend', description: task.description }, played), {
            addGenerationPrompt: true,
          });
          expect(e.input).toBe(expected);
          expect(e.input.endsWith('<|start_header_id|>assistant<|end_header_id|>\n\n')).toBe(true);
          // The training-time information stays out: the official scripts prefix it themselves for the critic.
          expect(e.input).not.toContain(task.reference.trim());
          played.push({ role: 'agent', content: e.content });
        }
      });
    }
    // Raw generation kept in output, the shown text in content.
    expect(rows[0]!.dialogue_history[1]).toMatchObject({
      content: 'What should fB1 return for 1?',
      output: 'Let me think.\nWhat should fB1 return for 1?',
    });

    const card = readFileSync(r.cardPath!, 'utf8');
    expect(card).toMatch(
      /format version: `sweetloop-sweet-rl\/3`, checked against `facebookresearch\/sweet_rl` at `38daf2a58497e898a65ef530a7b1c13ff4b0f128`/,
    );
    expect(card).toMatch(/blocks: k = 2: line i and line i \+ 3 are the same task/);
    // B2's first session recorded its prompts (2 agent turns); the 8 other assistant entries were rebuilt.
    expect(card).toMatch(/2 assistant entries from the recorded prompt, 7 reconstructed/);
    expect(card).toMatch(/\| simulated \| 6 \|/);
    expect(card).toMatch(/\| train \| 6 \|/);
    // The official pipeline end to end, with this export's own file, k and chat template.
    expect(card).toContain(
      [
        '```bash',
        ...pipelineCommands({ file: 'backend.jsonl', k: 2, template: 'llama3', kind: 'backend' }),
        '```',
      ].join('\n'),
    );
    expect(card).toContain('DATA=backend.jsonl');
    expect(card).toContain('evaluate_code.py" "$DATA" --k 2 --ground_truth_preference_path');
    expect(card).toContain('sample_best_of_n.py" "$DATA" "$OUT/sampled.jsonl" --agent_model "$BASE"');
    expect(card).toContain('--response_template "<|start_header_id|>assistant<|end_header_id|>"');
    expect(card).toMatch(/sweetloop policy add sweet-actor --endpoint .* --base-model-dir "\$OUT\/actor"/);
    expect(card).toMatch(/sweetloop policy add sweet-lora --adapter \.\/adapter --on /);
  });

  it('a human rating never leaks into the reward', async () => {
    const path = join(dir, 'b4.jsonl');
    await exportSessions(
      prisma,
      { format: 'sweet-rl', salt: SALT, filters: { kind: 'backend', source: 'both', perTask: 2 } },
      path,
    );
    const rows = readJsonl(path);
    const b4 = rows.filter((x) => x.task.problem_description === world.tasks.B4!.description);
    expect(b4).toHaveLength(2);
    const human = await prisma.session.findUniqueOrThrow({ where: { id: world.humanSession } });
    expect(human.reward).toBe(0.5); // blended with the 5-star rating in the database
    expect(b4.map((x) => x.reward)).toEqual([0, 0]); // both sessions' scores
    // B4's simulated reply was over the cap: cut in the entry, while the next input shows what the agent saw.
    const h = b4[0]!.dialogue_history;
    expect(h[2]!.content).toBe(LONG_REPLY.slice(0, 400));
    expect((h[3] as { input: string }).input).toContain(LONG_REPLY.trim());
  });

  it('refuses a mixed export, and --per-task outside sweet-rl, with a clear message', async () => {
    await expect(
      exportSessions(
        prisma,
        { format: 'sweet-rl', salt: SALT, filters: { source: 'simulated' } },
        join(dir, 'mixed.jsonl'),
      ),
    ).rejects.toThrow(/--kind/);
    await expect(
      exportSessions(prisma, { format: 'jsonl', salt: SALT, filters: { perTask: 2 } }, join(dir, 'x.jsonl')),
    ).rejects.toThrow(/--per-task/);
    expect(() => parseExportRequest({ format: 'jsonl', perTask: 2 })).toThrow(/perTask: only with the sweet-rl format/);
    expect(() => parseExportRequest({ format: 'sweet-rl', since: 'yesterday-ish' })).toThrow(/since: expected a date/);
    expect(() => parseExportRequest({ format: 'sweet-rl', source: 'robots' })).toThrow(/source/);
  });

  it('frontend: the final page is screenshotted beside the file and answer is its relative path', async () => {
    const path = join(dir, 'front', 'frontend.jsonl');
    await import('node:fs/promises').then((fs) => fs.mkdir(dirname(path), { recursive: true }));
    const r = await exportSessions(
      prisma,
      { format: 'sweet-rl', salt: SALT, filters: { kind: 'frontend', source: 'simulated' } },
      path,
    );
    const [row] = readJsonl(path);
    expect(row!.answer).toMatch(/^frontend\.jsonl\.screenshots\/[0-9a-f]{32}\.png$/);
    const png = readFileSync(join(dirname(path), row!.answer));
    expect(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(true);
    expect(row!.reward).toBe(0.85);
    const last = row!.dialogue_history.at(-1) as { output: string };
    expect(last.output).toContain('<h1 class="text-4xl text-red-600">Bakery</h1>');
    expect(row!.task.test_cases).toBeUndefined();
    expect(r.cardMarkdown).toMatch(
      /screenshots of the final pages: `frontend\.jsonl\.screenshots\/` \(1 files\); reward metric: pixel-ssim-v1/,
    );
    expect(r.cardMarkdown).toContain('DATA=frontend.jsonl');
    expect(r.cardMarkdown).toContain('evaluate_html.py" "$DATA" --k 1 --temp_path');
    expect(r.cardMarkdown).toContain(
      [
        '```bash',
        ...pipelineCommands({ file: 'frontend.jsonl', k: 1, template: 'llama3', kind: 'frontend' }),
        '```',
      ].join('\n'),
    );
  }, 60_000);

  it('frontend: a final page the renderer refuses leaves its session out, named in the card, and the export goes on', async () => {
    const path = join(dir, 'front-capped', 'frontend.jsonl');
    await import('node:fs/promises').then((fs) => fs.mkdir(dirname(path), { recursive: true }));
    // A cap no page can meet (not even its own document): every final page is refused.
    const renderer = await Renderer.launch({ maxRequests: 0 });
    try {
      // Every session is left out here, so the file is empty: asked for (allowEmpty), as an export that wrote nothing is refused.
      const r = await exportSessions(
        prisma,
        {
          format: 'sweet-rl',
          salt: SALT,
          filters: { kind: 'frontend', source: 'simulated' },
          renderer,
          allowEmpty: true,
        },
        path,
      );
      expect(readJsonl(path)).toEqual([]);
      expect(r.cardMarkdown).toMatch(
        /left out \(not a trajectory\): 1 \(its final page cannot be rendered \(the page made more than 0 requests, the cap for one render\)\)/,
      );
    } finally {
      await renderer.close();
    }
  }, 60_000);
});

/** An arrow type in the terms of a Hugging Face feature (what `datasets` derives from the same Parquet file). */
function featureOf(f: Field): unknown {
  const dtype = (type: DataType): string => {
    const s = String(type);
    const map: Record<string, string> = {
      Utf8: 'string',
      Int32: 'int32',
      Int64: 'int64',
      Float64: 'float64',
      Bool: 'bool',
    };
    if (map[s]) return map[s]!;
    const ts = /^Timestamp<MILLISECOND, UTC>$/.exec(s);
    if (ts) return 'timestamp[ms, tz=UTC]';
    throw new Error(`unexpected arrow type ${s}`);
  };
  if (String(f.type).startsWith('List<')) {
    const child = (f.type as DataType & { children: Field[] }).children[0]!;
    if (String(child.type).startsWith('Struct<')) {
      return {
        name: f.name,
        // A member may itself be a list (a turn's token ids and log-probabilities).
        list: (child.type as DataType & { children: Field[] }).children.map(featureOf),
      };
    }
    return { name: f.name, list: dtype(child.type) };
  }
  return { name: f.name, dtype: dtype(f.type) };
}

describe('Hugging Face dataset folder', () => {
  it('declares configs per kind and split, and features that match each Parquet file (read by arrow-rs)', async () => {
    const out = join(dir, 'hf');
    const r = await exportSessions(prisma, { format: 'hf', salt: SALT, filters: { source: 'both' } }, out);
    expect(r.cardPath).toBe(join(out, 'README.md'));
    const card = readFileSync(r.cardPath!, 'utf8');
    // Not the official scripts' format: the card says which export is, and how to make it.
    expect(card).toContain('sweetloop export --format sweet-rl --kind backend --per-task 3 --out FILE');
    const front = /^---\n([^]*?)\n---\n/.exec(card);
    expect(front).not.toBeNull();
    const meta = parseYaml(front![1]!) as {
      configs: { config_name: string; data_files: { split: string; path: string }[] }[];
      dataset_info: { config_name: string; features: unknown[]; splits: { name: string; num_examples: number }[] }[];
    };
    expect(meta.configs.map((c) => c.config_name)).toEqual(['backend', 'frontend']);
    expect(meta.configs[0]!.data_files).toEqual([{ split: 'train', path: 'data/backend/train.parquet' }]);
    expect(meta.configs[1]!.data_files).toEqual([{ split: 'train', path: 'data/frontend/train.parquet' }]);
    let rows = 0;
    for (const config of meta.configs) {
      const info = meta.dataset_info.find((d) => d.config_name === config.config_name)!;
      for (const file of config.data_files) {
        const table = tableFromIPC(readParquet(new Uint8Array(readFileSync(join(out, file.path)))).intoIPCStream());
        expect(info.features).toEqual(table.schema.fields.map(featureOf));
        expect(info.splits.find((s) => s.name === file.split)!.num_examples).toBe(table.numRows);
        rows += table.numRows;
        // The dialogue is a list of structs.
        expect(info.features).toContainEqual(
          expect.objectContaining({
            name: 'turns',
            list: expect.arrayContaining([{ name: 'content', dtype: 'string' }]),
          }),
        );
      }
    }
    // 8 answered backend sessions (7 simulated + the person's) and the frontend one.
    expect(rows).toBe(9);
    expect(r.sessions).toBe(9);
    expect(readdirSync(dir).filter((f) => f.endsWith('.partial'))).toEqual([]);
    await expect(exportSessions(prisma, { format: 'hf', salt: SALT }, out)).rejects.toThrow(/not empty/);
  });
});

describe('/mod export', () => {
  it('small exports come back as attachments; large ones stay on the server with their path', async () => {
    const serverDir = join(dir, 'server');
    const small = await exportForModerator(
      prisma,
      { format: 'sweet-rl', kind: 'backend', source: 'simulated', perTask: 2 },
      { salt: SALT, maxBytes: 10_000_000, serverDir },
    );
    expect(small.delivery).toBe('attachment');
    if (small.delivery !== 'attachment') throw new Error('unreachable');
    expect(small.files.map((f) => f.name)).toEqual([
      expect.stringMatching(/\.sweet-rl\.jsonl$/),
      expect.stringMatching(/\.sweet-rl\.jsonl\.README\.md$/),
    ]);
    expect(small.files[0]!.data.toString('utf8').trim().split('\n')).toHaveLength(6);
    expect(readdirSync(serverDir)).toEqual([]);

    const big = await exportForModerator(
      prisma,
      { format: 'jsonl', source: 'both' },
      { salt: SALT, maxBytes: 1000, serverDir },
    );
    expect(big.delivery).toBe('server');
    if (big.delivery !== 'server') throw new Error('unreachable');
    expect(existsSync(big.path)).toBe(true);
    expect(big.bytes).toBeGreaterThan(1000);
    expect(readFileSync(big.path, 'utf8').trim().split('\n')).toHaveLength(9);
    expect(existsSync(big.cardPath)).toBe(true);
    await expect(
      exportForModerator(prisma, { format: 'csv' }, { salt: SALT, maxBytes: 1000, serverDir }),
    ).rejects.toThrow(/format/);
  });
});
