// Taking a person's rows out of export files without losing anything else (bot/privacy.ts calls it for every
// file a deletion finds). A byte scan cannot see text inside a Snappy-compressed Parquet page or behind a JSON
// escape (\u00e9, \"), so each format is decoded first and matched on its decoded strings:
// - JSON Lines: every line is parsed; the lines holding a needle are dropped, the others are kept byte for byte.
// - Parquet (our `parquet` export and the `hf` folder's files): every row group is read with hyparquet and written
//   again with hyparquet-writer without the rows holding a needle, with the same schema, key-value metadata,
//   codecs and row groups; the new file is read back and compared with the rows kept before it replaces the old
//   one. A Hugging Face folder's card (README.md) gets the new row count of that split, since `datasets` checks it.
// A file that cannot be decoded, or whose rewrite would change anything but the removed rows, raises ScrubError
// and is left as it was: the caller reports it.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parquetMetadata, parquetReadObjects, parquetSchema, type FileMetaData, type ParquetParsers } from 'hyparquet';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';

/** A file that could not be cleaned; the message says why, and the file was not changed. */
export class ScrubError extends Error {
  override name = 'ScrubError';
}

/** What a rewrite did: rows (lines) kept and removed. */
export interface ScrubCount {
  kept: number;
  removed: number;
}

/**
 * Whether a decoded value holds one of the needles: a string (or object key) containing one, or bytes containing
 * one's UTF-8. The one matching rule of deletion for every decoded format.
 */
export function holdsNeedle(value: unknown, needles: readonly string[]): boolean {
  if (typeof value === 'string') return needles.some((n) => value.includes(n));
  if (value instanceof Uint8Array) {
    const b = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    return needles.some((n) => b.includes(Buffer.from(n, 'utf8')));
  }
  if (Array.isArray(value)) return value.some((v) => holdsNeedle(v, needles));
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    return Object.entries(value).some(([k, v]) => holdsNeedle(k, needles) || holdsNeedle(v, needles));
  }
  return false;
}

/** Writes `data` next to `path` and renames it over it, so a crash leaves the old file or the new one. */
async function replaceFile(path: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${path}.${randomUUID().slice(0, 8)}.scrub-tmp`;
  try {
    await writeFile(tmp, data);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** Drops the lines of a JSON Lines file that hold a needle once decoded; other lines stay byte for byte. */
export async function scrubJsonl(path: string, needles: readonly string[]): Promise<ScrubCount> {
  const lines = (await readFile(path, 'utf8')).split('\n');
  const kept: string[] = [];
  let removed = 0;
  lines.forEach((line, i) => {
    if (line.trim() === '') return void kept.push(line);
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      throw new ScrubError(`${path}: line ${i + 1} is not JSON (${(err as Error).message}); the file was left as it was`);
    }
    if (holdsNeedle(value, needles)) removed++;
    else kept.push(line);
  });
  if (removed) await replaceFile(path, kept.join('\n'));
  return { kept: kept.filter((l) => l.trim() !== '').length, removed };
}

/** Whether a file holds a needle: decoded when it is JSON (escapes included), else as raw bytes. */
export function bytesHoldNeedle(name: string, data: Buffer, needles: readonly string[]): boolean {
  if (/\.json$/i.test(name)) {
    try {
      return holdsNeedle(JSON.parse(data.toString('utf8')), needles);
    } catch {
      // not JSON after all: the byte scan below decides
    }
  }
  return needles.some((n) => data.includes(Buffer.from(n, 'utf8')));
}

const MAGIC = Buffer.from('PAR1');

/** Whether the bytes are a Parquet file (magic at both ends). */
export function isParquet(data: Buffer): boolean {
  return data.length >= 12 && data.subarray(0, 4).equals(MAGIC) && data.subarray(data.length - 4).equals(MAGIC);
}

// Values are kept as stored (integers for times and dates) so that the rewrite writes back exactly what was read.
const RAW_PARSERS: Partial<ParquetParsers> = {
  timestampFromMilliseconds: (x) => x,
  timestampFromMicroseconds: (x) => x,
  timestampFromNanoseconds: (x) => x,
  dateFromDays: (x) => x,
};

/** Types whose values hyparquet reads into a form hyparquet-writer does not write back bit for bit. */
function unsupportedColumn(meta: FileMetaData): string | null {
  for (const e of meta.schema) {
    const t = e.logical_type?.type;
    if (e.type === 'INT96' || e.type === 'FIXED_LEN_BYTE_ARRAY') return `${e.name} (${e.type})`;
    if (e.converted_type && ['DECIMAL', 'INTERVAL', 'JSON', 'BSON', 'MAP', 'MAP_KEY_VALUE'].includes(e.converted_type)) return `${e.name} (${e.converted_type})`;
    if (t && ['DECIMAL', 'JSON', 'BSON', 'FLOAT16', 'UUID', 'VARIANT', 'GEOMETRY', 'GEOGRAPHY', 'MAP'].includes(t)) return `${e.name} (${t})`;
  }
  return null;
}

const WRITABLE_CODECS = new Set(['UNCOMPRESSED', 'SNAPPY']);

async function readRows(file: ArrayBuffer, metadata: FileMetaData, rowStart: number, rowEnd: number): Promise<Record<string, unknown>[]> {
  if (rowEnd <= rowStart) return [];
  return parquetReadObjects({ file, metadata, rowStart, rowEnd, utf8: false, parsers: RAW_PARSERS });
}

/** The schema and metadata a rewrite must keep, as comparable JSON. */
function shape(meta: FileMetaData): string {
  return JSON.stringify({ schema: meta.schema, kv: meta.key_value_metadata ?? [] }, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
}

/**
 * Rewrites a Parquet file without the rows holding a needle (nothing is written when no row does). ScrubError,
 * with the file untouched, when it cannot be read or written back without loss.
 */
export async function scrubParquet(path: string, needles: readonly string[]): Promise<ScrubCount> {
  const buf = await readFile(path);
  const file = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;
  const fail = (why: string) => new ScrubError(`${path}: ${why}; the file was left as it was`);
  let meta: FileMetaData;
  try {
    meta = parquetMetadata(file);
  } catch (err) {
    throw fail(`not a readable Parquet file (${(err as Error).message})`);
  }
  const unsupported = unsupportedColumn(meta);
  if (unsupported) throw fail(`column ${unsupported} cannot be rewritten without loss`);
  const top = parquetSchema(meta).children.map((c) => c.element.name);
  const codecs = new Map<string, string>();
  for (const c of meta.row_groups[0]?.columns ?? []) {
    const name = c.meta_data?.path_in_schema[0];
    if (name && !codecs.has(name)) codecs.set(name, c.meta_data!.codec);
  }
  const badCodec = [...codecs.values()].find((c) => !WRITABLE_CODECS.has(c));
  if (badCodec) throw fail(`compressed with ${badCodec}, which this rewrite cannot write back`);

  const groups: Record<string, unknown>[][] = [];
  let removed = 0;
  let start = 0;
  try {
    for (const rg of meta.row_groups) {
      const end = start + Number(rg.num_rows);
      const rows = await readRows(file, meta, start, end);
      const kept = rows.filter((r) => !holdsNeedle(r, needles));
      removed += rows.length - kept.length;
      groups.push(kept);
      start = end;
    }
  } catch (err) {
    throw fail(`its rows could not be read (${(err as Error).message})`);
  }
  const kept = groups.flat();
  if (!removed) return { kept: kept.length, removed: 0 };

  let out: Uint8Array;
  try {
    const writer = new ByteWriter();
    const kv = meta.key_value_metadata ?? [];
    const pw = new ParquetWriter({
      writer,
      schema: meta.schema,
      ...(kv.length ? { kvMetadata: kv } : {}),
      ...(meta.created_by ? { createdBy: meta.created_by } : {}),
    } as never);
    for (const rows of groups) {
      if (!rows.length) continue;
      pw.write({ columnData: top.map((name) => ({ name, data: rows.map((r) => r[name]), codec: codecs.get(name) ?? 'SNAPPY' })) as never, rowGroupSize: rows.length });
    }
    pw.finish();
    out = new Uint8Array(writer.getBuffer());
  } catch (err) {
    throw fail(`it could not be written back (${(err as Error).message})`);
  }
  // Read back what would replace the file: the same schema and metadata, and exactly the rows kept.
  const back = out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength) as ArrayBuffer;
  let same = false;
  try {
    const m2 = parquetMetadata(back);
    same = shape(m2) === shape(meta) && isDeepStrictEqual((await readRows(back, m2, 0, Number(m2.num_rows))).map((r) => ({ ...r })), kept.map((r) => ({ ...r })));
  } catch {
    same = false;
  }
  if (!same) throw fail('its rewrite did not read back as the rows kept');
  await replaceFile(path, out);
  return { kept: kept.length, removed };
}

/**
 * After a Hugging Face folder's Parquet file lost rows: sets that split's `num_examples` in the folder's card
 * (README.md, bot/export/card.ts writes it), which `datasets` checks when loading. Returns the card's path, or
 * null when the file is not in such a folder. ScrubError when the card names the file but not its row count.
 */
export async function updateHfCardRows(parquetPath: string, rows: number): Promise<string | null> {
  let dir = dirname(parquetPath);
  for (let up = 0; up < 4; up++, dir = dirname(dir)) {
    const card = join(dir, 'README.md');
    if (!existsSync(card)) continue;
    const rel = relative(dir, parquetPath).split(sep).join('/');
    const text = await readFile(card, 'utf8');
    if (!text.includes(`path: ${JSON.stringify(rel)}`)) continue;
    const updated = cardWithRows(text, rel, rows);
    if (updated === null) throw new ScrubError(`${card}: names ${rel} but not its num_examples; update it by hand to ${rows}`);
    if (updated !== text) await replaceFile(card, updated);
    return card;
  }
  return null;
}

const field = (line: string, key: string): string | null => {
  const m = new RegExp(`^\\s*-?\\s*${key}:\\s*(.*)$`).exec(line);
  if (!m) return null;
  const v = m[1]!.trim();
  try {
    return v.startsWith('"') ? (JSON.parse(v) as string) : v;
  } catch {
    return v;
  }
};

/** The card with `rows` as the num_examples of the split whose data file is `rel`; null when it is not there. */
export function cardWithRows(text: string, rel: string, rows: number): string | null {
  const lines = text.split('\n');
  let config: string | null = null;
  let split: string | null = null;
  let section = '';
  let target: { config: string; split: string } | null = null;
  for (const line of lines) {
    if (/^[A-Za-z_]\w*:/.test(line) || line === '---') section = line.replace(/:.*$/, '');
    const c = field(line, 'config_name');
    if (c !== null) config = c;
    const s = field(line, 'split');
    if (s !== null && section === 'configs') split = s;
    if (section === 'configs' && field(line, 'path') === rel && config !== null && split !== null) target = { config, split };
  }
  if (!target) return null;
  config = null;
  let inSplit = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^[A-Za-z_]\w*:/.test(line) || line === '---') section = line.replace(/:.*$/, '');
    if (section !== 'dataset_info') continue;
    const c = field(line, 'config_name');
    if (c !== null) {
      config = c;
      inSplit = false;
    }
    const n = field(line, 'name');
    if (n !== null) inSplit = config === target.config && n === target.split;
    if (inSplit && field(line, 'num_examples') !== null) {
      lines[i] = line.replace(/num_examples:.*$/, `num_examples: ${rows}`);
      return lines.join('\n');
    }
  }
  return null;
}
