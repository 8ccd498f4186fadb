import { mkdtempSync, promises as fs, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  encodeSafetensors,
  openSafetensors,
  readSafetensors,
  readSafetensorsDir,
  roundTo,
  writeSafetensors,
  writeSafetensorsDir,
  type NamedTensor,
} from '../../../trainer/model/safetensors.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sweetloop-st-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function sample(): Map<string, NamedTensor> {
  let s = 12345;
  const rnd = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 - 0.5) * 8;
  const big = new Float32Array(3 * 5).map(rnd);
  const special = Float32Array.from([
    0,
    -0,
    1,
    -1,
    65504,
    1e-8,
    3.4e38,
    -1e-45,
    Infinity,
    -Infinity,
    NaN,
    0.1,
    1 / 3,
    6.1e-5,
    2 ** -20,
  ]);
  return new Map([
    ['model.embed_tokens.weight', { shape: [3, 5], data: big }],
    ['special', { shape: [15], data: special }],
    ['scalar', { shape: [], data: Float32Array.from([2.5]) }],
    ['empty', { shape: [0, 4], data: new Float32Array(0) }],
  ]);
}

const bits = (a: Float32Array) => [...new Uint32Array(a.buffer, a.byteOffset, a.length)];

describe('safetensors', () => {
  it('round-trips F32 bit-exactly (NaN, ±0, ±Inf and subnormals included)', async () => {
    const file = path.join(dir, 'f32.safetensors');
    const t = sample();
    await writeSafetensors(file, t, { metadata: { note: 'x' } });
    const back = await readSafetensors(file);
    expect([...back.keys()]).toEqual([...t.keys()]);
    for (const [k, v] of t) {
      expect(back.get(k)!.shape).toEqual(v.shape);
      expect(bits(back.get(k)!.data)).toEqual(bits(v.data));
    }
    const f = await openSafetensors(file);
    expect(f.metadata).toEqual({ format: 'pt', note: 'x' });
    expect(f.entries.get('special')!.dtype).toBe('F32');
    await f.close();
    // Header padded so the data section starts 8-byte aligned, as the reference writer does.
    const raw = await fs.readFile(file);
    expect(Number(raw.readBigUInt64LE(0)) % 8).toBe(0);
  });

  it('round-trips F16 and BF16 within their rounding (round to nearest even)', async () => {
    for (const dtype of ['F16', 'BF16'] as const) {
      const file = path.join(dir, `${dtype}.safetensors`);
      const t = sample();
      await writeSafetensors(file, t, { dtype });
      const back = await readSafetensors(file);
      const round = dtype === 'F16' ? roundTo.f16 : roundTo.bf16;
      const relTol = dtype === 'F16' ? 2 ** -11 : 2 ** -8;
      for (const [k, v] of t) {
        const got = back.get(k)!.data;
        for (let i = 0; i < v.data.length; i++) {
          const x = v.data[i]!;
          if (Number.isNaN(x)) expect(Number.isNaN(got[i]!)).toBe(true);
          else {
            expect(got[i]).toBe(Math.fround(round(x)));
            if (Number.isFinite(got[i]!) && Math.abs(x) > (dtype === 'F16' ? 6.1e-5 : 1e-37)) {
              expect(Math.abs(got[i]! - x)).toBeLessThanOrEqual(relTol * Math.abs(x));
            }
          }
        }
      }
    }
    // Known encodings: F16 max 65504, smallest subnormal 2^-24, overflow to Inf, ties to even.
    expect(roundTo.f16(65504)).toBe(65504);
    expect(roundTo.f16(65520)).toBe(Infinity);
    expect(roundTo.f16(2 ** -24)).toBe(2 ** -24);
    expect(roundTo.f16(2 ** -26)).toBe(0);
    expect(roundTo.f16(1 + 2 ** -11)).toBe(1); // tie → even
    expect(roundTo.f16(1 + 3 * 2 ** -11)).toBe(1 + 2 ** -9);
    expect(roundTo.bf16(1 + 2 ** -8)).toBe(1);
    expect(roundTo.bf16(1 + 3 * 2 ** -8)).toBe(1 + 2 ** -6);
    const f = await openSafetensors(path.join(dir, 'BF16.safetensors'));
    expect(f.entries.get('model.embed_tokens.weight')).toMatchObject({ dtype: 'BF16', begin: 0, end: 30 });
    await f.close();
  });

  it('writes and reads sharded checkpoints with an index', async () => {
    const d = path.join(dir, 'sharded');
    const t = sample();
    const files = await writeSafetensorsDir(d, t, { maxShardBytes: 64 });
    expect(files).toContain('model.safetensors.index.json');
    expect(files.filter((f) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(f)).length).toBeGreaterThan(1);
    const index = JSON.parse(await fs.readFile(path.join(d, 'model.safetensors.index.json'), 'utf8'));
    expect(Object.keys(index.weight_map).sort()).toEqual([...t.keys()].sort());
    const back = await readSafetensorsDir(d);
    for (const [k, v] of t) expect(bits(back.get(k)!.data)).toEqual(bits(v.data));
    // Re-saving unsharded removes the old shards and index.
    await writeSafetensorsDir(d, t);
    expect((await fs.readdir(d)).sort()).toEqual(['model.safetensors']);
  });

  it('reports truncated and corrupt files with the file name and the problem', async () => {
    const good = Buffer.concat(encodeSafetensors(sample()));
    const cases: [string, Buffer, RegExp][] = [
      ['tiny.safetensors', good.subarray(0, 5), /tiny\.safetensors: truncated: 5 bytes/],
      [
        'cut.safetensors',
        good.subarray(0, good.length - 3),
        /cut\.safetensors: truncated: tensor "\w+" needs data up to byte \d+/,
      ],
      [
        'header.safetensors',
        good.subarray(0, 40),
        /header\.safetensors: truncated or corrupt: header claims \d+ bytes but only 32 follow/,
      ],
    ];
    const junk = Buffer.from(good);
    junk.write('{"x": [', 8, 'utf8');
    cases.push(['junk.safetensors', junk, /junk\.safetensors: corrupt header \(not valid JSON\)/]);
    const header = JSON.stringify({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 4] } });
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(header.length));
    cases.push([
      'size.safetensors',
      Buffer.concat([len, Buffer.from(header), Buffer.alloc(8)]),
      /size\.safetensors: corrupt: tensor "a" \(F32 \[2\]\) should take 8 bytes, header says 4/,
    ]);
    const i64 = JSON.stringify({ a: { dtype: 'I64', shape: [1], data_offsets: [0, 8] } });
    len.writeBigUInt64LE(BigInt(i64.length));
    await fs.writeFile(path.join(dir, 'i64.safetensors'), Buffer.concat([len, Buffer.from(i64), Buffer.alloc(8)]));
    for (const [name, bytes, re] of cases) {
      await fs.writeFile(path.join(dir, name), bytes);
      await expect(readSafetensors(path.join(dir, name))).rejects.toThrow(re);
    }
    await expect(readSafetensors(path.join(dir, 'i64.safetensors'))).rejects.toThrow(
      /tensor "a" has dtype I64; only F32, F16 and BF16/,
    );
    await expect(readSafetensors(path.join(dir, 'missing.safetensors'))).rejects.toThrow(
      /missing\.safetensors: cannot open/,
    );
    await expect(readSafetensorsDir(path.join(dir, 'nowhere'))).rejects.toThrow(/not a safetensors model directory/);
  });

  it('reports an index that names a tensor its shard lacks', async () => {
    const d = path.join(dir, 'badindex');
    await writeSafetensorsDir(d, sample(), { maxShardBytes: 64 });
    const indexPath = path.join(d, 'model.safetensors.index.json');
    const index = JSON.parse(await fs.readFile(indexPath, 'utf8'));
    index.weight_map.ghost = index.weight_map.scalar;
    await fs.writeFile(indexPath, JSON.stringify(index));
    await expect(readSafetensorsDir(d)).rejects.toThrow(/the index says tensor "ghost" is here, but it is not/);
  });
});
