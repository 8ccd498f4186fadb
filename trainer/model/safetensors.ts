// safetensors reader and writer (https://github.com/huggingface/safetensors, format section):
//   8 bytes  little-endian u64 N = header length
//   N bytes  JSON: { "<name>": { "dtype": "F32", "shape": [..], "data_offsets": [begin, end] }, "__metadata__": {..} }
//   rest     the tensors' bytes, offsets relative to the end of the header
// Tensors are read one at a time with positioned reads, so multi-gigabyte shards never sit in one Buffer.
// tfjs computes in float32 only: F32, F16 and BF16 are read and upcast to Float32Array; the writer emits F32
// (exact), BF16 or F16 (rounded to nearest even). Sharded checkpoints use HF's model.safetensors.index.json.

import { promises as fs } from 'node:fs';
import path from 'node:path';

export type StoredDtype = 'F32' | 'F16' | 'BF16';
const BYTES: Record<StoredDtype, number> = { F32: 4, F16: 2, BF16: 2 };

export interface NamedTensor {
  shape: number[];
  data: Float32Array;
}

export interface TensorEntry {
  dtype: string;
  shape: number[];
  /** Byte range within the data section. */
  begin: number;
  end: number;
}

export class SafetensorsError extends Error {
  constructor(
    readonly file: string,
    problem: string,
  ) {
    super(`${file}: ${problem}`);
    this.name = 'SafetensorsError';
  }
}

export const INDEX_FILE = 'model.safetensors.index.json';
export const SINGLE_FILE = 'model.safetensors';

// ── float conversions ──────────────────────────────────────────────────────────────────────────────────

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24; // zero and subnormals
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}
const HALF_TABLE = (() => {
  const t = new Float32Array(65536);
  for (let i = 0; i < 65536; i++) t[i] = halfToFloat(i);
  return t;
})();

function floatToHalf(v: number): number {
  f32[0] = v;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // Inf / NaN
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow → Inf
  if (e <= 0) {
    if (e < -10) return sign; // underflow → ±0
    mant |= 0x800000; // subnormal half: shift in the implicit bit, round to nearest even
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rounded = (mant + half - 1 + ((mant >> shift) & 1)) >> shift;
    return sign | rounded;
  }
  const rounded = mant + 0xfff + ((mant >> 13) & 1);
  if (rounded & 0x800000) {
    mant = 0;
    e += 1;
    if (e >= 0x1f) return sign | 0x7c00;
  } else mant = rounded;
  return sign | (e << 10) | (mant >> 13);
}

function floatToBf16(v: number): number {
  f32[0] = v;
  const x = u32[0]!;
  if ((x & 0x7f800000) === 0x7f800000 && x & 0x7fffff) return (x >>> 16) | 0x40; // keep NaN a NaN
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

function decode(bytes: Buffer, dtype: StoredDtype, count: number): Float32Array {
  const out = new Float32Array(count);
  if (dtype === 'F32') {
    // Copy through a fresh buffer: the data section need not be 4-byte aligned.
    new Uint8Array(out.buffer).set(bytes.subarray(0, count * 4));
  } else if (dtype === 'F16') {
    for (let i = 0; i < count; i++) out[i] = HALF_TABLE[bytes.readUInt16LE(2 * i)]!;
  } else {
    const bits = new Uint32Array(out.buffer);
    for (let i = 0; i < count; i++) bits[i] = bytes.readUInt16LE(2 * i) << 16;
  }
  return out;
}

function encode(data: Float32Array, dtype: StoredDtype): Buffer {
  if (dtype === 'F32') return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const out = Buffer.alloc(data.length * 2);
  const conv = dtype === 'F16' ? floatToHalf : floatToBf16;
  for (let i = 0; i < data.length; i++) out.writeUInt16LE(conv(data[i]!), 2 * i);
  return out;
}

// ── reading ────────────────────────────────────────────────────────────────────────────────────────────

export interface SafetensorsFile {
  file: string;
  entries: Map<string, TensorEntry>;
  metadata: Record<string, string>;
  /** Reads one tensor, upcast to float32. */
  read(name: string): Promise<NamedTensor>;
  close(): Promise<void>;
}

/** Opens a .safetensors file and validates its header against the file size. */
export async function openSafetensors(file: string): Promise<SafetensorsFile> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, 'r');
  } catch (e) {
    throw new SafetensorsError(file, `cannot open: ${(e as Error).message}`);
  }
  try {
    const size = (await handle.stat()).size;
    if (size < 8) throw new SafetensorsError(file, `truncated: ${size} bytes, too short for the 8-byte header length`);
    const lenBuf = Buffer.alloc(8);
    await handle.read(lenBuf, 0, 8, 0);
    const headerLen = lenBuf.readBigUInt64LE(0);
    if (headerLen > BigInt(size - 8)) {
      throw new SafetensorsError(
        file,
        `truncated or corrupt: header claims ${headerLen} bytes but only ${size - 8} follow`,
      );
    }
    const n = Number(headerLen);
    const headerBuf = Buffer.alloc(n);
    await handle.read(headerBuf, 0, n, 8);
    let header: unknown;
    try {
      header = JSON.parse(headerBuf.toString('utf8'));
    } catch (e) {
      throw new SafetensorsError(file, `corrupt header (not valid JSON): ${(e as Error).message}`);
    }
    if (typeof header !== 'object' || header === null || Array.isArray(header))
      throw new SafetensorsError(file, 'corrupt header: not a JSON object');
    const dataStart = 8 + n;
    const dataSize = size - dataStart;
    const entries = new Map<string, TensorEntry>();
    let metadata: Record<string, string> = {};
    for (const [name, raw] of Object.entries(header as Record<string, unknown>)) {
      if (name === '__metadata__') {
        metadata = (raw ?? {}) as Record<string, string>;
        continue;
      }
      const e = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
      const shape = e.shape;
      const offs = e.data_offsets;
      if (
        typeof e.dtype !== 'string' ||
        !Array.isArray(shape) ||
        !shape.every((d) => Number.isInteger(d) && d >= 0) ||
        !Array.isArray(offs) ||
        offs.length !== 2 ||
        !offs.every((o) => Number.isInteger(o) && o >= 0) ||
        offs[1] < offs[0]
      ) {
        throw new SafetensorsError(file, `corrupt header entry for tensor "${name}": ${JSON.stringify(raw)}`);
      }
      const [begin, end] = offs as [number, number];
      if (end > dataSize) {
        throw new SafetensorsError(
          file,
          `truncated: tensor "${name}" needs data up to byte ${end} but the data section has ${dataSize} bytes`,
        );
      }
      const elems = (shape as number[]).reduce((a, b) => a * b, 1);
      const width = BYTES[e.dtype as StoredDtype];
      if (width !== undefined && end - begin !== elems * width) {
        throw new SafetensorsError(
          file,
          `corrupt: tensor "${name}" (${e.dtype} [${shape.join(', ')}]) should take ${elems * width} bytes, header says ${end - begin}`,
        );
      }
      entries.set(name, { dtype: e.dtype, shape: shape as number[], begin, end });
    }
    const sorted = [...entries.entries()].sort((a, b) => a[1].begin - b[1].begin);
    for (let i = 1; i < sorted.length; i++) {
      if (sorted[i]![1].begin < sorted[i - 1]![1].end) {
        throw new SafetensorsError(file, `corrupt: tensors "${sorted[i - 1]![0]}" and "${sorted[i]![0]}" overlap`);
      }
    }
    return {
      file,
      entries,
      metadata,
      async read(name: string): Promise<NamedTensor> {
        const e = entries.get(name);
        if (!e) throw new SafetensorsError(file, `no tensor named "${name}"`);
        if (!(e.dtype in BYTES)) {
          throw new SafetensorsError(
            file,
            `tensor "${name}" has dtype ${e.dtype}; only F32, F16 and BF16 can be loaded (tfjs computes in float32)`,
          );
        }
        const buf = Buffer.alloc(e.end - e.begin);
        const { bytesRead } = await handle.read(buf, 0, buf.length, dataStart + e.begin);
        if (bytesRead !== buf.length) throw new SafetensorsError(file, `truncated while reading tensor "${name}"`);
        const count = e.shape.reduce((a, b) => a * b, 1);
        return { shape: e.shape, data: decode(buf, e.dtype as StoredDtype, count) };
      },
      close: () => handle.close(),
    };
  } catch (e) {
    await handle.close();
    throw e;
  }
}

/** Reads every tensor of one file (or only those `filter` accepts). */
export async function readSafetensors(
  file: string,
  filter?: (name: string) => boolean,
): Promise<Map<string, NamedTensor>> {
  const f = await openSafetensors(file);
  try {
    const out = new Map<string, NamedTensor>();
    for (const name of f.entries.keys()) if (!filter || filter(name)) out.set(name, await f.read(name));
    return out;
  } finally {
    await f.close();
  }
}

/**
 * Reads the weights of a model directory: model.safetensors.index.json (sharded) when present, else
 * model.safetensors. Every tensor the index names must be found in the shard it names.
 */
export async function readSafetensorsDir(
  dir: string,
  filter?: (name: string) => boolean,
): Promise<Map<string, NamedTensor>> {
  const indexPath = path.join(dir, INDEX_FILE);
  let indexText: string | undefined;
  try {
    indexText = await fs.readFile(indexPath, 'utf8');
  } catch {
    /* not sharded */
  }
  if (indexText === undefined) {
    const single = path.join(dir, SINGLE_FILE);
    try {
      await fs.access(single);
    } catch {
      throw new SafetensorsError(dir, `no ${SINGLE_FILE} and no ${INDEX_FILE}: not a safetensors model directory`);
    }
    return readSafetensors(single, filter);
  }
  let index: { weight_map?: Record<string, string> };
  try {
    index = JSON.parse(indexText);
  } catch (e) {
    throw new SafetensorsError(indexPath, `corrupt index (not valid JSON): ${(e as Error).message}`);
  }
  const map = index.weight_map;
  if (!map || typeof map !== 'object') throw new SafetensorsError(indexPath, 'corrupt index: no "weight_map" object');
  const byShard = new Map<string, string[]>();
  for (const [name, shard] of Object.entries(map)) {
    if (typeof shard !== 'string' || shard.includes('/') || shard.includes('\\'))
      throw new SafetensorsError(indexPath, `bad shard name for "${name}": ${JSON.stringify(shard)}`);
    if (filter && !filter(name)) continue;
    byShard.set(shard, [...(byShard.get(shard) ?? []), name]);
  }
  const out = new Map<string, NamedTensor>();
  for (const [shard, names] of byShard) {
    const f = await openSafetensors(path.join(dir, shard));
    try {
      for (const name of names) {
        if (!f.entries.has(name))
          throw new SafetensorsError(f.file, `the index says tensor "${name}" is here, but it is not`);
        out.set(name, await f.read(name));
      }
    } finally {
      await f.close();
    }
  }
  return out;
}

// ── writing ────────────────────────────────────────────────────────────────────────────────────────────

/** Serialises tensors (in the given order) to safetensors bytes. */
export function encodeSafetensors(
  tensors: ReadonlyMap<string, NamedTensor>,
  opts: { dtype?: StoredDtype; metadata?: Record<string, string> } = {},
): Buffer[] {
  const dtype = opts.dtype ?? 'F32';
  const header: Record<string, unknown> = { __metadata__: { format: 'pt', ...opts.metadata } };
  const parts: Buffer[] = [];
  let offset = 0;
  for (const [name, t] of tensors) {
    const elems = t.shape.reduce((a, b) => a * b, 1);
    if (elems !== t.data.length)
      throw new Error(
        `tensor "${name}": shape [${t.shape.join(', ')}] holds ${elems} values, data has ${t.data.length}`,
      );
    const bytes = encode(t.data, dtype);
    header[name] = { dtype, shape: t.shape, data_offsets: [offset, offset + bytes.length] };
    parts.push(bytes);
    offset += bytes.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((8 + Buffer.byteLength(json)) % 8)) % 8); // data section 8-byte aligned, as HF writes it
  const headerBuf = Buffer.from(json, 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(headerBuf.length));
  return [len, headerBuf, ...parts];
}

/** Writes atomically (temporary file, then rename): an interrupted save never leaves a half-written file. */
export async function writeFileAtomic(file: string, chunks: Buffer[] | string): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}-${Date.now()}`;
  const handle = await fs.open(tmp, 'w');
  try {
    if (typeof chunks === 'string') await handle.writeFile(chunks, 'utf8');
    else for (const c of chunks) await handle.write(c);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(tmp, file);
}

export async function writeSafetensors(
  file: string,
  tensors: ReadonlyMap<string, NamedTensor>,
  opts: { dtype?: StoredDtype; metadata?: Record<string, string> } = {},
): Promise<void> {
  await writeFileAtomic(file, encodeSafetensors(tensors, opts));
}

/**
 * Writes model weights into `dir` as HF does: one model.safetensors, or, above `maxShardBytes`, numbered
 * shards model-0000i-of-0000n.safetensors with model.safetensors.index.json. Returns the files written.
 */
export async function writeSafetensorsDir(
  dir: string,
  tensors: ReadonlyMap<string, NamedTensor>,
  opts: { dtype?: StoredDtype; maxShardBytes?: number; metadata?: Record<string, string> } = {},
): Promise<string[]> {
  const dtype = opts.dtype ?? 'F32';
  const max = opts.maxShardBytes ?? 5e9;
  const shards: Map<string, NamedTensor>[] = [new Map()];
  let current = 0;
  let total = 0;
  for (const [name, t] of tensors) {
    const bytes = t.data.length * BYTES[dtype];
    if (current > 0 && current + bytes > max) {
      shards.push(new Map());
      current = 0;
    }
    shards[shards.length - 1]!.set(name, t);
    current += bytes;
    total += bytes;
  }
  await fs.mkdir(dir, { recursive: true });
  // Remove stale weights of an earlier layout so a reader cannot mix them with the new ones.
  for (const f of await fs.readdir(dir)) {
    if (f === INDEX_FILE || f === SINGLE_FILE || /^model-\d{5}-of-\d{5}\.safetensors$/.test(f))
      await fs.rm(path.join(dir, f));
  }
  if (shards.length === 1) {
    await writeSafetensors(path.join(dir, SINGLE_FILE), shards[0]!, { dtype, metadata: opts.metadata });
    return [SINGLE_FILE];
  }
  const n = shards.length;
  const names: string[] = [];
  const weightMap: Record<string, string> = {};
  for (let i = 0; i < n; i++) {
    const name = `model-${String(i + 1).padStart(5, '0')}-of-${String(n).padStart(5, '0')}.safetensors`;
    await writeSafetensors(path.join(dir, name), shards[i]!, { dtype, metadata: opts.metadata });
    for (const t of shards[i]!.keys()) weightMap[t] = name;
    names.push(name);
  }
  await writeFileAtomic(
    path.join(dir, INDEX_FILE),
    JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }, null, 2) + '\n',
  );
  return [...names, INDEX_FILE];
}

/** Exposed for tests: the rounding the writer applies. */
export const roundTo = {
  f16: (v: number) => halfToFloat(floatToHalf(v)),
  bf16: (v: number) => {
    u32[0] = floatToBf16(v) << 16;
    return f32[0]!;
  },
};

/** Float32 values as little-endian F32, F16 or BF16 bytes (the writer's rounding), e.g. for GGUF tensors. */
export { encode as encodeFloats };
