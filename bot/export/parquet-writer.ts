// Parquet through hyparquet-writer, shared by every Parquet export (parquet.ts: our full record; verl.ts: verl's
// rows): schema element builders, and a sink that encodes one row group per batch and hands each finished row
// group straight to the output stream, so only the batch being encoded is in memory.
import type { Writable } from 'node:stream';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import { writeChunk, type RecordSink } from './sink.ts';

export type El = { name: string; num_children?: number; [k: string]: unknown };

export const req = 'REQUIRED';
export const opt = 'OPTIONAL';
export const str = (name: string, repetition = req): El => ({
  name,
  type: 'BYTE_ARRAY',
  converted_type: 'UTF8',
  repetition_type: repetition,
});
export const i32 = (name: string, repetition = req): El => ({ name, type: 'INT32', repetition_type: repetition });
export const i64 = (name: string, repetition = req): El => ({ name, type: 'INT64', repetition_type: repetition });
export const f64 = (name: string, repetition = req): El => ({ name, type: 'DOUBLE', repetition_type: repetition });
export const bool = (name: string, repetition = req): El => ({ name, type: 'BOOLEAN', repetition_type: repetition });
export const ts = (name: string, repetition = req): El => ({
  name,
  type: 'INT64',
  repetition_type: repetition,
  logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' },
});

/** A 3-level LIST of `element` (a leaf, or a struct whose already-flattened schema follows as `children`). */
export function list(name: string, repetition: string, element: El, children: El[] = []): El[] {
  return [
    { name, repetition_type: repetition, converted_type: 'LIST', num_children: 1 },
    { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    {
      ...element,
      name: 'element',
      ...(children.length ? { num_children: childCount(children), repetition_type: req } : {}),
    },
    ...children,
  ];
}

/** A struct (group) column of the given fields, each field's schema already flattened (leaves, lists, structs). */
export function struct(name: string, repetition: string, fields: El[][]): El[] {
  return [{ name, repetition_type: repetition, num_children: fields.length }, ...fields.flat()];
}

/** How many direct children a flattened run of fields has (each field's first element is the field itself). */
function childCount(flat: El[]): number {
  let n = 0;
  let i = 0;
  const skip = (at: number): number => {
    const e = flat[at]!;
    let next = at + 1;
    for (let c = 0; c < (e.num_children ?? 0); c++) next = skip(next);
    return next;
  };
  while (i < flat.length) {
    i = skip(i);
    n++;
  }
  return n;
}

/** A hyparquet Writer whose flush (called after every row group) hands the bytes to a Node stream. */
class StreamByteWriter extends ByteWriter {
  constructor(private readonly out: Writable) {
    super(1 << 20);
  }
  flush(): Promise<void> {
    // Copy: the buffer is reused for the next row group while the stream may still hold this chunk.
    const chunk = Buffer.from(new Uint8Array(this.buffer, 0, this.index));
    this.index = 0;
    return writeChunk(this.out, chunk);
  }
  override finish(): void {
    // The footer is flushed by the sink's finish (which can await); nothing to do here.
  }
}

/** Top-level columns in file order: each column's flattened schema. */
export interface ParquetColumn {
  name: string;
  schema: El[];
}

/**
 * A sink writing `rows(batch)` (values in `columns` order, by name) as one row group per batch. `kvMetadata` goes
 * into the footer.
 */
export function parquetRowSink<T>(
  out: Writable,
  columns: readonly ParquetColumn[],
  rows: (batch: T[]) => { name: string; data: unknown[] }[],
  kvMetadata: Record<string, string> = {},
): RecordSink<T> {
  const writer = new StreamByteWriter(out);
  const pw = new ParquetWriter({
    writer,
    schema: [{ name: 'root', num_children: columns.length }, ...columns.flatMap((c) => c.schema)] as never,
    // An empty list in the footer is written with a BYTE element type, which strict thrift readers (arrow-rs)
    // reject: leave the field out instead.
    ...(Object.keys(kvMetadata).length
      ? { kvMetadata: Object.entries(kvMetadata).map(([key, value]) => ({ key, value })) }
      : {}),
    createdBy: 'sweetloop export (hyparquet-writer)',
    // Long texts rarely repeat outside the task columns; per-column min/max of 16-byte prefixes is still cheap.
    statistics: true,
  });
  return {
    async write(batch) {
      if (batch.length === 0) return;
      await pw.write({ columnData: rows(batch) as never, rowGroupSize: batch.length });
    },
    async finish() {
      pw.finish();
      await writer.flush();
    },
  };
}
