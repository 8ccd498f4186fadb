// trainer/serve/ holds the serving side of a policy: the engine contract, the llama.cpp engine, the GGUF files it
// loads and the OpenAI-compatible server. Files here may import tasks/, prisma/ and trainer/ only.
//
// GGUF v3, the file format of llama.cpp (ggml's docs/gguf.md), byte for byte, little-endian:
//   u32 magic "GGUF", u32 version 3, u64 tensor count, u64 key/value count
//   key/values: gguf string key (u64 length + UTF-8), u32 value type, value (arrays: u32 item type, u64 n, items)
//   tensor infos: name, u32 n_dims, u64 ne[n_dims] (ne[0] = the innermost, contiguous dimension), u32 ggml type,
//                 u64 offset from the start of the data section (a multiple of general.alignment)
//   padding to general.alignment (32), then the tensors' bytes, each padded to the alignment.
// This file is the format only (write and parse back); what a llama model must hold is gguf-convert.ts's
// business and gguf-validate.ts checks it. @huggingface/gguf writes only headers, so the writer is our own.
import { promises as fs } from 'node:fs';

export const GGUF_MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
export const GGUF_VERSION = 3;
export const GGUF_DEFAULT_ALIGNMENT = 32;

/** Value types of metadata. */
export const GgufType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;
export type GgufTypeId = (typeof GgufType)[keyof typeof GgufType];
const TYPE_NAMES = Object.fromEntries(Object.entries(GgufType).map(([k, v]) => [v, k])) as Record<number, string>;
export function ggufTypeName(t: number): string {
  return TYPE_NAMES[t] ?? `unknown(${t})`;
}

/** ggml tensor types this project writes. */
export const GgmlType = { F32: 0, F16: 1 } as const;
export type GgmlTypeId = (typeof GgmlType)[keyof typeof GgmlType];
const GGML_BYTES: Record<number, number> = { [GgmlType.F32]: 4, [GgmlType.F16]: 2 };

/**
 * Every ggml type a GGUF read here may hold (foreign models come quantized): name, values per block and bytes per
 * block, as llama.cpp's ggml reports them (getBlockSizeForGgmlType / getTypeSizeForGgmlType of the binary
 * node-llama-cpp 3.21.1 ships). Types ggml dropped (4, 5, 31-33, 36-38) are absent: a file using one is refused.
 */
const GGML_READ: Record<number, [name: string, block: number, bytes: number]> = {
  0: ['F32', 1, 4],
  1: ['F16', 1, 2],
  2: ['Q4_0', 32, 18],
  3: ['Q4_1', 32, 20],
  6: ['Q5_0', 32, 22],
  7: ['Q5_1', 32, 24],
  8: ['Q8_0', 32, 34],
  9: ['Q8_1', 32, 36],
  10: ['Q2_K', 256, 84],
  11: ['Q3_K', 256, 110],
  12: ['Q4_K', 256, 144],
  13: ['Q5_K', 256, 176],
  14: ['Q6_K', 256, 210],
  15: ['Q8_K', 256, 292],
  16: ['IQ2_XXS', 256, 66],
  17: ['IQ2_XS', 256, 74],
  18: ['IQ3_XXS', 256, 98],
  19: ['IQ1_S', 256, 50],
  20: ['IQ4_NL', 32, 18],
  21: ['IQ3_S', 256, 110],
  22: ['IQ2_S', 256, 82],
  23: ['IQ4_XS', 256, 136],
  24: ['I8', 1, 1],
  25: ['I16', 1, 2],
  26: ['I32', 1, 4],
  27: ['I64', 1, 8],
  28: ['F64', 1, 8],
  29: ['IQ1_M', 256, 56],
  30: ['BF16', 1, 2],
  34: ['TQ1_0', 256, 54],
  35: ['TQ2_0', 256, 66],
  39: ['MXFP4', 32, 17],
};

export function ggmlTypeName(t: number): string {
  return GGML_READ[t]?.[0] ?? `ggml type ${t}`;
}

/** Bytes of a tensor of ggml type `type` and shape `ne`; undefined for an unknown type or a row that is not whole blocks. */
export function ggmlTensorBytes(type: number, ne: readonly number[]): number | undefined {
  const t = GGML_READ[type];
  if (!t || ne[0]! % t[1] !== 0) return undefined;
  return (ne.reduce((a, b) => a * b, 1) / t[1]) * t[2];
}

type Scalar = number | bigint | boolean | string;
/** One metadata value with its exact GGUF type (llama.cpp rejects an int32 where it reads a uint32). */
export type GgufValue =
  | { type: Exclude<GgufTypeId, typeof GgufType.ARRAY>; value: Scalar }
  | { type: typeof GgufType.ARRAY; itemType: Exclude<GgufTypeId, typeof GgufType.ARRAY>; value: Scalar[] };

export const gguf = {
  u32: (value: number): GgufValue => ({ type: GgufType.UINT32, value }),
  i32: (value: number): GgufValue => ({ type: GgufType.INT32, value }),
  f32: (value: number): GgufValue => ({ type: GgufType.FLOAT32, value }),
  bool: (value: boolean): GgufValue => ({ type: GgufType.BOOL, value }),
  str: (value: string): GgufValue => ({ type: GgufType.STRING, value }),
  strings: (value: string[]): GgufValue => ({ type: GgufType.ARRAY, itemType: GgufType.STRING, value }),
  i32s: (value: number[]): GgufValue => ({ type: GgufType.ARRAY, itemType: GgufType.INT32, value }),
  f32s: (value: number[]): GgufValue => ({ type: GgufType.ARRAY, itemType: GgufType.FLOAT32, value }),
};

export interface GgufTensorSource {
  name: string;
  /** ggml order: ne[0] is the contiguous dimension (a Hugging Face [out, in] matrix is ne = [in, out]). */
  ne: number[];
  type: GgmlTypeId;
  /** Produces the tensor's bytes when the writer reaches it, so a large model is never held twice. */
  bytes: () => Buffer | Promise<Buffer>;
}

// ── writing ────────────────────────────────────────────────────────────────────────────────────────────

class ByteSink {
  private readonly chunks: Buffer[] = [];
  length = 0;
  push(b: Buffer): void {
    this.chunks.push(b);
    this.length += b.length;
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  u64(v: number | bigint): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  str(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.push(bytes);
  }
  scalar(type: number, v: Scalar, key: string): void {
    const b8 = (n: number) => Buffer.alloc(n);
    let b: Buffer;
    switch (type) {
      case GgufType.UINT8:
        (b = b8(1)).writeUInt8(Number(v));
        break;
      case GgufType.INT8:
        (b = b8(1)).writeInt8(Number(v));
        break;
      case GgufType.UINT16:
        (b = b8(2)).writeUInt16LE(Number(v));
        break;
      case GgufType.INT16:
        (b = b8(2)).writeInt16LE(Number(v));
        break;
      case GgufType.UINT32:
        (b = b8(4)).writeUInt32LE(Number(v));
        break;
      case GgufType.INT32:
        (b = b8(4)).writeInt32LE(Number(v));
        break;
      case GgufType.FLOAT32:
        (b = b8(4)).writeFloatLE(Number(v));
        break;
      case GgufType.BOOL:
        (b = b8(1)).writeUInt8(v ? 1 : 0);
        break;
      case GgufType.UINT64:
        (b = b8(8)).writeBigUInt64LE(BigInt(v));
        break;
      case GgufType.INT64:
        (b = b8(8)).writeBigInt64LE(BigInt(v));
        break;
      case GgufType.FLOAT64:
        (b = b8(8)).writeDoubleLE(Number(v));
        break;
      case GgufType.STRING:
        if (typeof v !== 'string') throw new Error(`gguf: "${key}" is a STRING but got ${typeof v}`);
        this.str(v);
        return;
      default:
        throw new Error(`gguf: "${key}": cannot write value type ${type}`);
    }
    this.push(b);
  }
  concat(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

const pad = (n: number, align: number) => (align - (n % align)) % align;

/** The header (everything before the data section, padding included) and each tensor's data offset. */
export function encodeGgufHeader(
  metadata: ReadonlyMap<string, GgufValue>,
  tensors: readonly Omit<GgufTensorSource, 'bytes'>[],
  alignment = GGUF_DEFAULT_ALIGNMENT,
): { header: Buffer; offsets: number[]; sizes: number[] } {
  const s = new ByteSink();
  s.u32(GGUF_MAGIC);
  s.u32(GGUF_VERSION);
  s.u64(tensors.length);
  s.u64(metadata.size);
  for (const [key, v] of metadata) {
    s.str(key);
    s.u32(v.type);
    if (v.type === GgufType.ARRAY) {
      s.u32(v.itemType);
      s.u64(v.value.length);
      for (const item of v.value) s.scalar(v.itemType, item, key);
    } else s.scalar(v.type, v.value, key);
  }
  const offsets: number[] = [];
  const sizes: number[] = [];
  let offset = 0;
  for (const t of tensors) {
    const bytesPer = GGML_BYTES[t.type];
    if (bytesPer === undefined) throw new Error(`gguf: tensor ${t.name}: unsupported ggml type ${t.type}`);
    const size = t.ne.reduce((a, b) => a * b, 1) * bytesPer;
    s.str(t.name);
    s.u32(t.ne.length);
    for (const d of t.ne) s.u64(d);
    s.u32(t.type);
    s.u64(offset);
    offsets.push(offset);
    sizes.push(size);
    offset += size + pad(size, alignment);
  }
  s.push(Buffer.alloc(pad(s.length, alignment)));
  return { header: s.concat(), offsets, sizes };
}

/**
 * Writes a GGUF file atomically (temporary file, then rename): a reader never sees half a file. Tensors are
 * produced and written one at a time.
 */
export async function writeGguf(
  file: string,
  metadata: ReadonlyMap<string, GgufValue>,
  tensors: readonly GgufTensorSource[],
  alignment = GGUF_DEFAULT_ALIGNMENT,
): Promise<void> {
  const { header, sizes } = encodeGgufHeader(metadata, tensors, alignment);
  const tmp = `${file}.tmp-${process.pid}-${Date.now()}`;
  const handle = await fs.open(tmp, 'w');
  try {
    await handle.write(header);
    for (const [i, t] of tensors.entries()) {
      const bytes = await t.bytes();
      if (bytes.length !== sizes[i]) {
        throw new Error(
          `gguf: tensor ${t.name}: ${bytes.length} bytes for ne [${t.ne.join(', ')}] ${ggmlTypeName(t.type)} (expected ${sizes[i]})`,
        );
      }
      await handle.write(bytes);
      const p = pad(bytes.length, alignment);
      if (p) await handle.write(Buffer.alloc(p));
    }
    await handle.sync();
  } catch (err) {
    await handle.close();
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await handle.close();
  await fs.rename(tmp, file);
}

// ── parsing ────────────────────────────────────────────────────────────────────────────────────────────

export class GgufFormatError extends Error {
  constructor(
    readonly file: string,
    problem: string,
  ) {
    super(`${file}: not a valid GGUF file: ${problem}`);
    this.name = 'GgufFormatError';
  }
}

export interface GgufTensorInfo {
  name: string;
  ne: number[];
  type: number;
  /** Relative to the data section. */
  offset: number;
}

export interface GgufHeader {
  version: number;
  metadata: Map<string, GgufValue>;
  tensors: GgufTensorInfo[];
  alignment: number;
  /** Absolute file offset of the data section. */
  dataOffset: number;
  fileSize: number;
}

// Caps that keep a hostile header from making the parser allocate or loop without end.
const MAX_STRING = 64 * 1024 * 1024;
const MAX_ARRAY = 64 * 1024 * 1024;
const MAX_DIMS = 4;
// Tokenizer arrays of large vocabularies (150k tokens, 150k merges) take a few MiB.
const MAX_HEADER = 64 * 1024 * 1024;

/**
 * Parses a GGUF header (metadata and tensor infos) and checks it against the file: every length and count
 * must fit in the bytes present, every tensor must lie inside the data section and be aligned. Throws
 * GgufFormatError naming the problem; never trusts a length before checking it.
 */
export async function readGgufHeader(file: string): Promise<GgufHeader> {
  let buf: Buffer;
  let fileSize: number;
  try {
    const st = await fs.stat(file);
    fileSize = st.size;
    const handle = await fs.open(file, 'r');
    try {
      buf = Buffer.alloc(Math.min(fileSize, MAX_HEADER));
      await handle.read(buf, 0, buf.length, 0);
    } finally {
      await handle.close();
    }
  } catch (err) {
    throw new GgufFormatError(file, `cannot read: ${(err as Error).message}`);
  }
  const fail = (problem: string): never => {
    throw new GgufFormatError(file, problem);
  };
  let pos = 0;
  const need = (n: number, what: string) => {
    if (pos + n > buf.length) {
      fail(
        buf.length < fileSize
          ? `header larger than ${MAX_HEADER} bytes (at ${what})`
          : `truncated while reading ${what} at byte ${pos} (file has ${fileSize} bytes)`,
      );
    }
  };
  const u32 = (what: string) => (need(4, what), (pos += 4), buf.readUInt32LE(pos - 4));
  const u64 = (what: string) => {
    need(8, what);
    const v = buf.readBigUInt64LE(pos);
    pos += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) fail(`${what} is ${v}, far beyond the file`);
    return Number(v);
  };
  const str = (what: string) => {
    const n = u64(`${what} length`);
    if (n > MAX_STRING) fail(`${what} claims ${n} bytes`);
    need(n, what);
    const s = buf.toString('utf8', pos, pos + n);
    pos += n;
    return s;
  };
  const scalar = (type: number, what: string): Scalar => {
    switch (type) {
      case GgufType.UINT8:
        return (need(1, what), buf.readUInt8(pos++));
      case GgufType.INT8:
        return (need(1, what), buf.readInt8(pos++));
      case GgufType.UINT16:
        return (need(2, what), (pos += 2), buf.readUInt16LE(pos - 2));
      case GgufType.INT16:
        return (need(2, what), (pos += 2), buf.readInt16LE(pos - 2));
      case GgufType.UINT32:
        return u32(what);
      case GgufType.INT32:
        return (need(4, what), (pos += 4), buf.readInt32LE(pos - 4));
      case GgufType.FLOAT32:
        return (need(4, what), (pos += 4), buf.readFloatLE(pos - 4));
      case GgufType.BOOL: {
        need(1, what);
        const b = buf.readUInt8(pos++);
        if (b > 1) fail(`${what} is a BOOL holding ${b}`);
        return b === 1;
      }
      case GgufType.UINT64:
        return (need(8, what), (pos += 8), buf.readBigUInt64LE(pos - 8));
      case GgufType.INT64:
        return (need(8, what), (pos += 8), buf.readBigInt64LE(pos - 8));
      case GgufType.FLOAT64:
        return (need(8, what), (pos += 8), buf.readDoubleLE(pos - 8));
      case GgufType.STRING:
        return str(what);
      default:
        return fail(`${what} has unknown value type ${type}`);
    }
  };

  const magic = u32('magic');
  if (magic !== GGUF_MAGIC) fail(`bad magic 0x${magic.toString(16)} (expected "GGUF")`);
  const version = u32('version');
  if (version !== GGUF_VERSION) fail(`version ${version} (only GGUF v3 is supported)`);
  const nTensors = u64('tensor count');
  const nKv = u64('metadata count');
  // Every key/value takes at least 8 + 4 + 1 bytes and every tensor info at least 8 + 4 + 8 + 4 + 8.
  if (nKv * 13 + nTensors * 32 > buf.length)
    fail(`header claims ${nKv} keys and ${nTensors} tensors, more than the file can hold: truncated?`);
  const metadata = new Map<string, GgufValue>();
  for (let i = 0; i < nKv; i++) {
    const key = str(`key #${i}`);
    if (metadata.has(key)) fail(`duplicate key "${key}"`);
    const type = u32(`type of "${key}"`);
    if (type === GgufType.ARRAY) {
      const itemType = u32(`item type of "${key}"`);
      if (itemType === GgufType.ARRAY || TYPE_NAMES[itemType] === undefined)
        fail(`"${key}" is an array of unsupported type ${itemType}`);
      const n = u64(`length of "${key}"`);
      if (n > MAX_ARRAY) fail(`"${key}" claims ${n} items`);
      const value: Scalar[] = new Array(n);
      for (let j = 0; j < n; j++) value[j] = scalar(itemType, `"${key}"[${j}]`);
      metadata.set(key, { type: GgufType.ARRAY, itemType: itemType as Exclude<GgufTypeId, 9>, value });
    } else {
      metadata.set(key, { type: type as Exclude<GgufTypeId, 9>, value: scalar(type, `"${key}"`) });
    }
  }
  const alignEntry = metadata.get('general.alignment');
  let alignment = GGUF_DEFAULT_ALIGNMENT;
  if (alignEntry) {
    if (alignEntry.type !== GgufType.UINT32)
      fail(`general.alignment must be a UINT32, is ${ggufTypeName(alignEntry.type)}`);
    alignment = Number(alignEntry.value);
    if (alignment === 0 || (alignment & (alignment - 1)) !== 0)
      fail(`general.alignment ${alignment} is not a power of two`);
  }
  const tensors: GgufTensorInfo[] = [];
  const names = new Set<string>();
  for (let i = 0; i < nTensors; i++) {
    const name = str(`tensor name #${i}`);
    if (names.has(name)) fail(`duplicate tensor "${name}"`);
    names.add(name);
    const nDims = u32(`dimensions of ${name}`);
    if (nDims < 1 || nDims > MAX_DIMS) fail(`tensor ${name} has ${nDims} dimensions`);
    const ne: number[] = [];
    for (let d = 0; d < nDims; d++) {
      const v = u64(`ne[${d}] of ${name}`);
      if (v === 0) fail(`tensor ${name} has a zero dimension`);
      ne.push(v);
    }
    const type = u32(`type of ${name}`);
    const offset = u64(`offset of ${name}`);
    if (offset % alignment !== 0)
      fail(`tensor ${name} offset ${offset} is not a multiple of the alignment ${alignment}`);
    tensors.push({ name, ne, type, offset });
  }
  const dataOffset = pos + pad(pos, alignment);
  const sizeOf = (t: GgufTensorInfo): number =>
    ggmlTensorBytes(t.type, t.ne) ??
    fail(
      GGML_READ[t.type]
        ? `tensor ${t.name} has ne[0] ${t.ne[0]}, not a whole number of ${ggmlTypeName(t.type)} blocks`
        : `tensor ${t.name} has ${ggmlTypeName(t.type)}, a type llama.cpp does not know`,
    );
  for (const t of tensors) {
    const size = sizeOf(t);
    if (dataOffset + t.offset + size > fileSize) {
      fail(
        `tensor ${t.name} ends at byte ${dataOffset + t.offset + size}, past the end of the file (${fileSize} bytes): truncated?`,
      );
    }
  }
  const sorted = [...tensors].sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1]!;
    const prevEnd = prev.offset + sizeOf(prev);
    if (sorted[i]!.offset < prevEnd) fail(`tensors ${prev.name} and ${sorted[i]!.name} overlap`);
  }
  return { version, metadata, tensors, alignment, dataOffset, fileSize };
}
