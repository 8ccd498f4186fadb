// Deletion's file rewrites (bot/export/scrub.ts) on real files: a row goes when its session id or pseudonym fields
// name the person, whatever its text holds (her words in another person's row stay); JSON Lines lines kept byte
// for byte, Parquet rewritten without her rows (Snappy, nested lists, metadata and row groups kept); rows naming
// no one counted; what cannot be cleaned refused with the file left as it was. The end-to-end runs are
// test/bin/commands/privacy.test.ts and test/bot/discord/privacy-delete.test.ts.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, describe, expect, it } from 'vitest';
import {
  cardWithRows,
  ownerOf,
  ScrubError,
  scrubJsonl,
  scrubParquet,
  type RowOwner,
} from '../../../bot/export/scrub.ts';
import { decompressedImage } from '../../helpers/parquet-pages.ts';

const dir = mkdtempSync(join(tmpdir(), 'sweetloop-scrub-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HER_SESSION = '6f1d2c3b-0000-4000-8000-000000000001';
const OTHER_SESSION = '6f1d2c3b-0000-4000-8000-000000000002';
const HER = 'p_0123456789abcdef0123456789abcdef';
const OTHER = 'p_fedcba9876543210fedcba9876543210';
const her: RowOwner = { sessionIds: new Set([HER_SESSION]), pseudonyms: new Set([HER]) };
const asciiJson = (v: unknown) =>
  JSON.stringify(v).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
const ab = (b: Buffer) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;

describe('ownerOf', () => {
  it("reads each format's identity fields, never the text", () => {
    // jsonl (record.ts), parquet / hf rows (parquet.ts), sweet-rl (sweet-rl.ts), preferences (preferences.ts)
    expect(ownerOf({ session: { id: HER_SESSION }, participant: { pseudonym: OTHER } }, her)).toBe('theirs');
    expect(ownerOf({ session: { id: OTHER_SESSION }, participant: { pseudonym: HER } }, her)).toBe('theirs');
    expect(ownerOf({ session_id: new TextEncoder().encode(HER_SESSION), participant: OTHER }, her)).toBe('theirs');
    expect(ownerOf({ session_id: HER_SESSION, task: {}, dialogue_history: [] }, her)).toBe('theirs');
    expect(ownerOf({ session_a: OTHER_SESSION, session_b: HER_SESSION, rater: OTHER }, her)).toBe('theirs');
    expect(ownerOf({ session_a: OTHER_SESSION, session_b: OTHER_SESSION, rater: HER }, her)).toBe('theirs');
    // trl-dpo pairs (trl.ts): a pair one of whose sessions is hers goes.
    expect(
      ownerOf(
        { prompt: [], chosen: [], rejected: [], chosen_session_id: OTHER_SESSION, rejected_session_id: HER_SESSION },
        her,
      ),
    ).toBe('theirs');
    expect(
      ownerOf(
        { prompt: [], chosen: [], rejected: [], chosen_session_id: OTHER_SESSION, rejected_session_id: OTHER_SESSION },
        her,
      ),
    ).toBe('other');
    // Another person's row that quotes her, names her session in its text or holds her pseudonym as text: not hers.
    expect(
      ownerOf(
        {
          session: { id: OTHER_SESSION, answer: `${HER_SESSION} ${HER}` },
          participant: { pseudonym: OTHER },
          turns: [{ content: 'yes' }],
        },
        her,
      ),
    ).toBe('other');
    expect(ownerOf({ session_id: OTHER_SESSION, ratings: [{ rater: HER }] }, her)).toBe('other');
    // A row that names nobody cannot be told apart: it is counted, never guessed.
    expect(ownerOf({ text: `yes ${HER_SESSION}` }, her)).toBe('unidentified');
    expect(ownerOf({ task: {}, dialogue_history: [], answer: 'x', reward: 1 }, her)).toBe('unidentified');
  });
});

describe('scrubJsonl', () => {
  it('drops her lines by identity (ASCII-escaped too) and keeps every other line byte for byte, her words in them included', async () => {
    const path = join(dir, 'escaped.jsonl');
    const others = [
      asciiJson({
        session: { id: OTHER_SESSION },
        participant: { pseudonym: OTHER },
        turns: [{ content: 'Ben says café, yes' }],
      }),
      '{"session_id":"x","answer":"yes"}',
    ];
    const hers = asciiJson({
      session: { id: HER_SESSION },
      participant: { pseudonym: HER },
      turns: [{ content: 'Zoë: yes' }],
    });
    writeFileSync(path, [others[0], hers, others[1], ''].join('\n'));
    expect(await scrubJsonl(path, her)).toEqual({ kept: 2, removed: 1, unidentified: 0 });
    expect(readFileSync(path, 'utf8')).toBe(`${others[0]}\n${others[1]}\n`);
  });

  it('counts lines naming no one and leaves a file without her rows untouched', async () => {
    const path = join(dir, 'anonymous.jsonl');
    const text = '{"text":"yes"}\n{"session_id":"y"}\n';
    writeFileSync(path, text);
    expect(await scrubJsonl(path, her)).toEqual({ kept: 2, removed: 0, unidentified: 1 });
    expect(readFileSync(path, 'utf8')).toBe(text);
  });

  it('refuses a malformed file and leaves it as it was', async () => {
    const path = join(dir, 'broken.jsonl');
    const text = `{"session_id":"${OTHER_SESSION}"}\n{"session_id": "${HER_SESSION}"\n`;
    writeFileSync(path, text);
    await expect(scrubJsonl(path, her)).rejects.toThrow(ScrubError);
    await expect(scrubJsonl(path, her)).rejects.toThrow(/line 2 is not JSON/);
    expect(readFileSync(path, 'utf8')).toBe(text);
  });
});

describe('scrubParquet', () => {
  function sample(): Buffer {
    const out = parquetWriteBuffer({
      columnData: [
        { name: 'session_id', data: ['a', HER_SESSION, 'c', 'd'] },
        { name: 'participant', data: [OTHER, OTHER, OTHER, HER] },
        { name: 'n', data: [1n, 2n, 3n, 4n], type: 'INT64' },
        { name: 'text', data: ['yes', 'her own words', '', null] },
      ],
      rowGroupSize: 2,
      kvMetadata: [{ key: 'sweetloop.filters', value: '{"k":1}' }],
    });
    return Buffer.from(out);
  }

  it('rewrites a Snappy file without her rows, keeping schema, metadata, row groups and the other rows', async () => {
    const path = join(dir, 'sample.parquet');
    const before = sample();
    writeFileSync(path, before);
    const m0 = parquetMetadata(ab(before));
    expect(m0.row_groups[0]!.columns[0]!.meta_data!.codec).toBe('SNAPPY');
    expect(await scrubParquet(path, her)).toEqual({ kept: 2, removed: 2, unidentified: 0 });
    const after = readFileSync(path);
    const m1 = parquetMetadata(ab(after));
    expect(m1.schema).toEqual(m0.schema);
    expect(m1.key_value_metadata).toEqual(m0.key_value_metadata);
    expect(m1.row_groups.map((g) => Number(g.num_rows))).toEqual([1, 1]);
    expect(m1.row_groups[0]!.columns[0]!.meta_data!.codec).toBe('SNAPPY');
    const rows = await parquetReadObjects({ file: ab(after) });
    expect(rows).toEqual([
      { session_id: 'a', participant: OTHER, n: 1n, text: 'yes' },
      { session_id: 'c', participant: OTHER, n: 3n, text: '' },
    ]);
    expect(decompressedImage(after).includes(Buffer.from('her own words'))).toBe(false);
  });

  it('writes nothing when no row is hers, and refuses a file that is not Parquet', async () => {
    const path = join(dir, 'clean.parquet');
    const before = sample();
    writeFileSync(path, before);
    expect(await scrubParquet(path, { sessionIds: new Set(['nobody']), pseudonyms: new Set() })).toEqual({
      kept: 4,
      removed: 0,
      unidentified: 0,
    });
    expect(readFileSync(path).equals(before)).toBe(true);
    const bad = join(dir, 'bad.parquet');
    writeFileSync(bad, `PAR1 ${HER_SESSION} PAR1`);
    await expect(scrubParquet(bad, her)).rejects.toThrow(/not a readable Parquet file.*left as it was/);
    expect(readFileSync(bad, 'utf8')).toBe(`PAR1 ${HER_SESSION} PAR1`);
  });
});

describe('cardWithRows', () => {
  it('sets the num_examples of the split whose file lost rows, and only that one', () => {
    const card = [
      '---',
      'configs:',
      '- config_name: "backend"',
      '  default: true',
      '  data_files:',
      '  - split: "train"',
      '    path: "data/backend/train.parquet"',
      '  - split: "test"',
      '    path: "data/backend/test.parquet"',
      'dataset_info:',
      '- config_name: "backend"',
      '  features:',
      '  - name: "test"',
      '    dtype: "string"',
      '  splits:',
      '  - name: "train"',
      '    num_examples: 5',
      '  - name: "test"',
      '    num_examples: 2',
      '---',
      '',
    ].join('\n');
    const out = cardWithRows(card, 'data/backend/test.parquet', 1)!;
    expect(out.split('\n').filter((l) => l.includes('num_examples'))).toEqual([
      '    num_examples: 5',
      '    num_examples: 1',
    ]);
    expect(cardWithRows(card, 'data/frontend/test.parquet', 1)).toBeNull();
  });
});
