// Our full record, one JSON object a line (see record.ts for the fields).
import type { Writable } from 'node:stream';
import type { ExportRecord } from './record.ts';
import { writeChunk, type RecordSink } from './sink.ts';

export function jsonlSink(out: Writable): RecordSink<ExportRecord> {
  return {
    async write(batch) {
      if (batch.length === 0) return;
      let text = '';
      for (const r of batch) text += JSON.stringify(r) + '\n';
      await writeChunk(out, text);
    },
    async finish() {},
  };
}
