// Deletion's file rewrites (bot/export/scrub.ts) on real files: JSON Lines matched after decoding (escapes of any
// kind), Parquet rewritten without the rows (Snappy, nested lists, metadata and row groups kept), and what cannot
// be cleaned refused with the file left as it was. The end-to-end run over real exports is
// test/bot/discord/privacy-delete.test.ts.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, describe, expect, it } from 'vitest';
import { cardWithRows, holdsNeedle, ScrubError, scrubJsonl, scrubParquet } from '../../../bot/export/scrub.ts';
import { decompressedImage } from '../../helpers/parquet-pages.ts';

const dir = mkdtempSync(join(tmpdir(), 'sweetloop-scrub-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const secret = 'Zoë said "négative" means zero';
const asciiJson = (v: unknown) => JSON.stringify(v).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
const ab = (b: Buffer) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;

describe('holdsNeedle', () => {
  it('looks into nested strings, keys and bytes, not numbers', () => {
    expect(holdsNeedle({ a: [{ b: `x ${secret} y` }] }, [secret])).toBe(true);
    expect(holdsNeedle({ [secret]: 1 }, [secret])).toBe(true);
    expect(holdsNeedle(new TextEncoder().encode(secret), [secret])).toBe(true);
    expect(holdsNeedle({ a: 123456789012345678n, b: 123456789012345678 }, ['123456789012345678'])).toBe(false);
  });
});

describe('scrubJsonl', () => {
  it('drops the lines holding a needle once decoded (\\u escapes, escaped quotes) and keeps the others byte for byte', async () => {
    const path = join(dir, 'escaped.jsonl');
    const others = [asciiJson({ who: 'ben', text: 'Ben says café' }), '{"who":"cy","text":"plain"}'];
    writeFileSync(path, [others[0], asciiJson({ who: 'ana', turns: [{ content: secret }] }), others[1], ''].join('\n'));
    expect(readFileSync(path, 'utf8')).not.toContain(secret); // a byte scan sees nothing
    expect(await scrubJsonl(path, [secret])).toEqual({ kept: 2, removed: 1 });
    expect(readFileSync(path, 'utf8')).toBe(`${others[0]}\n${others[1]}\n`);
  });

  it('refuses a malformed file and leaves it as it was', async () => {
    const path = join(dir, 'broken.jsonl');
    const text = `{"ok":1}\n{"text": "${secret}"\n`;
    writeFileSync(path, text);
    await expect(scrubJsonl(path, [secret])).rejects.toThrow(ScrubError);
    await expect(scrubJsonl(path, [secret])).rejects.toThrow(/line 2 is not JSON/);
    expect(readFileSync(path, 'utf8')).toBe(text);
  });
});

describe('scrubParquet', () => {
  function sample(): Buffer {
    const out = parquetWriteBuffer({
      columnData: [
        { name: 'id', data: ['a', 'b', 'c', 'd'] },
        { name: 'n', data: [1n, 2n, 3n, 4n], type: 'INT64' },
        { name: 'text', data: ['x', `${secret}, y`, '', null] },
      ],
      rowGroupSize: 2,
      kvMetadata: [{ key: 'sweetloop.filters', value: '{"k":1}' }],
    });
    return Buffer.from(out);
  }

  it('rewrites a Snappy file without the rows holding a needle, keeping schema, metadata, row groups and other rows', async () => {
    const path = join(dir, 'sample.parquet');
    const before = sample();
    writeFileSync(path, before);
    const m0 = parquetMetadata(ab(before));
    expect(m0.row_groups[0]!.columns[0]!.meta_data!.codec).toBe('SNAPPY');
    expect(decompressedImage(before).includes(Buffer.from(secret))).toBe(true);
    expect(await scrubParquet(path, [secret])).toEqual({ kept: 3, removed: 1 });
    const after = readFileSync(path);
    const m1 = parquetMetadata(ab(after));
    expect(m1.schema).toEqual(m0.schema);
    expect(m1.key_value_metadata).toEqual(m0.key_value_metadata);
    expect(m1.row_groups.map((g) => Number(g.num_rows))).toEqual([1, 2]);
    expect(m1.row_groups[0]!.columns[0]!.meta_data!.codec).toBe('SNAPPY');
    const rows = await parquetReadObjects({ file: ab(after) });
    expect(rows).toEqual([
      { id: 'a', n: 1n, text: 'x' },
      { id: 'c', n: 3n, text: '' },
      { id: 'd', n: 4n, text: null },
    ]);
    expect(decompressedImage(after).includes(Buffer.from(secret))).toBe(false);
  });

  it('writes nothing when no row matches, and refuses a file that is not Parquet', async () => {
    const path = join(dir, 'clean.parquet');
    const before = sample();
    writeFileSync(path, before);
    expect(await scrubParquet(path, ['nobody wrote this'])).toEqual({ kept: 4, removed: 0 });
    expect(readFileSync(path).equals(before)).toBe(true);
    const bad = join(dir, 'bad.parquet');
    writeFileSync(bad, `PAR1 ${secret} PAR1`);
    await expect(scrubParquet(bad, [secret])).rejects.toThrow(/not a readable Parquet file.*left as it was/);
    expect(readFileSync(bad, 'utf8')).toBe(`PAR1 ${secret} PAR1`);
  });
});

describe('cardWithRows', () => {
  it("sets the num_examples of the split whose file lost rows, and only that one", () => {
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
    expect(out.split('\n').filter((l) => l.includes('num_examples'))).toEqual(['    num_examples: 5', '    num_examples: 1']);
    expect(cardWithRows(card, 'data/frontend/test.parquet', 1)).toBeNull();
  });
});
