// Writing to a Node stream with back-pressure: an export never queues more than one batch ahead of the disk
// (or of a Discord upload), which is what keeps its memory flat.
import { once } from 'node:events';
import type { Writable } from 'node:stream';

export interface RecordSink<T> {
  /** Serialises one batch; resolves once the stream can take more. */
  write(batch: T[]): Promise<void>;
  /** Writes any trailer; does not end the stream (the caller owns it). */
  finish(): Promise<void>;
}

export async function writeChunk(out: Writable, chunk: string | Uint8Array): Promise<void> {
  if (out.errored) throw out.errored;
  if (out.destroyed || out.writableEnded) throw new Error('export output stream is closed');
  if (!out.write(chunk)) {
    // 'error' rejects the wait: a full disk surfaces instead of hanging.
    await once(out, 'drain');
  }
}
