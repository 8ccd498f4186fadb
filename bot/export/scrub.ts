// Taking a person's rows out of export files without losing anything else (bot/privacy.ts calls it for the JSON
// Lines and Parquet files under the folders a deletion scans). A row is theirs by identity, never by its text: the
// session id or pseudonym fields each export format carries (ROW_ID_FIELDS) name one of their sessions or their
// pseudonym. What they wrote inside someone else's row stays, and a row naming no one is kept and counted, so the
// receipt can say the file could not be checked.
// - JSON Lines: every line is parsed; their lines are dropped, the others are kept byte for byte.
// - Parquet (our `parquet` export and the `hf` folder's files): every row group is read with hyparquet and written
//   again with hyparquet-writer without their rows, with the same schema, key-value metadata, codecs and row
//   groups; the new file is read back and compared with the rows kept before it replaces the old one. A Hugging
//   Face folder's card (README.md) gets the new row count of that split, since `datasets` checks it.
// A file that cannot be decoded, or whose rewrite would change anything but the removed rows, raises ScrubError
// and is left as it was: the caller reports it.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parquetMetadata, parquetReadObjects, parquetSchema, type FileMetaData, type ParquetParsers } from 'hyparquet';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';

/** A file that could not be cleaned; the message says why, and the file was not changed. */
export class ScrubError extends Error {
  override name = 'ScrubError';
}

/** What a rewrite did: rows (lines) kept and removed, and how many of the kept name no session or person. */
export interface ScrubCount {
  kept: number;
  removed: number;
  unidentified: number;
}

/** Whom a deletion takes out of export files: their session ids and their export pseudonyms (one per salt). */
export interface RowOwner {
  sessionIds: ReadonlySet<string>;
  pseudonyms: ReadonlySet<string>;
}

/**
 * Where each export format names a row's sessions and person: the full record as JSON (record.ts: session.id,
 * participant.pseudonym), as Parquet and hf (parquet.ts: session_id, participant), sweet-rl (sweet-rl.ts:
 * session_id), trl-sft and verl-sft (training-rows.ts: session_id), trl-dpo pairs (trl.ts: chosen_session_id,
 * rejected_session_id) and people's preferences (preferences.ts: session_a, session_b, rater). A comparison that
 * shows one of their sessions goes with it, as its row does in the database (Preference cascades with Session).
 */
export const ROW_ID_FIELDS = {
  session: [
    ['session', 'id'],
    ['session_id'],
    ['session_a'],
    ['session_b'],
    ['chosen_session_id'],
    ['rejected_session_id'],
  ],
  person: [['participant', 'pseudonym'], ['participant'], ['rater']],
} as const;

const asText = (v: unknown): string | null =>
  typeof v === 'string'
    ? v
    : v instanceof Uint8Array
      ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8')
      : null;

function valueAt(row: unknown, path: readonly string[]): string | null {
  let v = row;
  for (const k of path) {
    if (!v || typeof v !== 'object' || Array.isArray(v) || v instanceof Uint8Array) return null;
    v = (v as Record<string, unknown>)[k];
  }
  return asText(v);
}

/** Whose a decoded row is: `theirs`, `other` (it names only others), or `unidentified` (it names no one). */
export function ownerOf(row: unknown, owner: RowOwner): 'theirs' | 'other' | 'unidentified' {
  const sessions = ROW_ID_FIELDS.session.map((p) => valueAt(row, p)).filter((v): v is string => v !== null);
  const people = ROW_ID_FIELDS.person.map((p) => valueAt(row, p)).filter((v): v is string => v !== null);
  if (!sessions.length && !people.length) return 'unidentified';
  return sessions.some((s) => owner.sessionIds.has(s)) || people.some((p) => owner.pseudonyms.has(p))
    ? 'theirs'
    : 'other';
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

/** Drops the person's lines of a JSON Lines file (decoded first); the other lines stay byte for byte. */
export async function scrubJsonl(path: string, owner: RowOwner): Promise<ScrubCount> {
  const lines = (await readFile(path, 'utf8')).split('\n');
  const kept: string[] = [];
  let removed = 0;
  let unidentified = 0;
  lines.forEach((line, i) => {
    if (line.trim() === '') return void kept.push(line);
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      throw new ScrubError(
        `${path}: line ${i + 1} is not JSON (${(err as Error).message}); the file was left as it was`,
      );
    }
    const whose = ownerOf(value, owner);
    if (whose === 'theirs') return void removed++;
    if (whose === 'unidentified') unidentified++;
    kept.push(line);
  });
  if (removed) await replaceFile(path, kept.join('\n'));
  return { kept: kept.filter((l) => l.trim() !== '').length, removed, unidentified };
}

const MAGIC = Buffer.from('PAR1');

/** Whether a file is Parquet (magic at both ends), read from its first and last four bytes only. */
export async function isParquetFile(path: string, size: number): Promise<boolean> {
  if (size < 12) return false;
  const f = await open(path, 'r');
  try {
    const head = Buffer.alloc(4);
    const tail = Buffer.alloc(4);
    await f.read(head, 0, 4, 0);
    await f.read(tail, 0, 4, size - 4);
    return head.equals(MAGIC) && tail.equals(MAGIC);
  } finally {
    await f.close();
  }
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
    if (e.converted_type && ['DECIMAL', 'INTERVAL', 'JSON', 'BSON', 'MAP', 'MAP_KEY_VALUE'].includes(e.converted_type))
      return `${e.name} (${e.converted_type})`;
    if (t && ['DECIMAL', 'JSON', 'BSON', 'FLOAT16', 'UUID', 'VARIANT', 'GEOMETRY', 'GEOGRAPHY', 'MAP'].includes(t))
      return `${e.name} (${t})`;
  }
  return null;
}

const WRITABLE_CODECS = new Set(['UNCOMPRESSED', 'SNAPPY']);

async function readRows(
  file: ArrayBuffer,
  metadata: FileMetaData,
  rowStart: number,
  rowEnd: number,
): Promise<Record<string, unknown>[]> {
  if (rowEnd <= rowStart) return [];
  return parquetReadObjects({ file, metadata, rowStart, rowEnd, utf8: false, parsers: RAW_PARSERS });
}

/** The schema and metadata a rewrite must keep, as comparable JSON. */
function shape(meta: FileMetaData): string {
  return JSON.stringify({ schema: meta.schema, kv: meta.key_value_metadata ?? [] }, (_k, v) =>
    typeof v === 'bigint' ? v.toString() : v,
  );
}

/**
 * Rewrites a Parquet file without the person's rows (nothing is written when it has none). ScrubError, with the
 * file untouched, when it cannot be read or written back without loss.
 */
export async function scrubParquet(path: string, owner: RowOwner): Promise<ScrubCount> {
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
  let unidentified = 0;
  let start = 0;
  try {
    for (const rg of meta.row_groups) {
      const end = start + Number(rg.num_rows);
      const rows = await readRows(file, meta, start, end);
      const whose = rows.map((r) => ownerOf(r, owner));
      const kept = rows.filter((_r, i) => whose[i] !== 'theirs');
      unidentified += whose.filter((w) => w === 'unidentified').length;
      removed += rows.length - kept.length;
      groups.push(kept);
      start = end;
    }
  } catch (err) {
    throw fail(`its rows could not be read (${(err as Error).message})`);
  }
  const kept = groups.flat();
  if (!removed) return { kept: kept.length, removed: 0, unidentified };

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
      pw.write({
        columnData: top.map((name) => ({
          name,
          data: rows.map((r) => r[name]),
          codec: codecs.get(name) ?? 'SNAPPY',
        })) as never,
        rowGroupSize: rows.length,
      });
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
    same =
      shape(m2) === shape(meta) &&
      isDeepStrictEqual(
        (await readRows(back, m2, 0, Number(m2.num_rows))).map((r) => ({ ...r })),
        kept.map((r) => ({ ...r })),
      );
  } catch {
    same = false;
  }
  if (!same) throw fail('its rewrite did not read back as the rows kept');
  await replaceFile(path, out);
  return { kept: kept.length, removed, unidentified };
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
    if (updated === null)
      throw new ScrubError(`${card}: names ${rel} but not its num_examples; update it by hand to ${rows}`);
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
    if (section === 'configs' && field(line, 'path') === rel && config !== null && split !== null)
      target = { config, split };
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
