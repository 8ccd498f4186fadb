// A task's expected outputs (its reference run in a sandbox of its own, tasks/backend-eval.ts), kept in memory so
// that scoring many answers to one task runs the reference once. Keyed by everything the run depends on (the
// evaluator version, Python, the reference, the calls, the limits); a run is kept only when it ended cleanly with
// no test timed out (a timeout says more about the machine's load than about the task). At most an hour old
// (references that read the clock), at most MAX_BYTES of result text in all, least recently used first out.
import { createHash } from 'node:crypto';

const TTL_MS = 60 * 60_000;
const MAX_BYTES = 64 * 1024 * 1024;
const MAX_ENTRIES = 2_000;

interface Entry<T> {
  at: number;
  bytes: number;
  value: Promise<T>;
}

export interface Computed<T> {
  value: T;
  /** Safe to reuse for the next answer to the same task. */
  keep: boolean;
  /** Size charged against the cache (the result channel's bytes). */
  bytes: number;
}

export class ExpectedCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private bytes = 0;

  constructor(private readonly now: () => number = Date.now) {}

  static key(parts: unknown[]): string {
    return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
  }

  /** The cached value for `key`, or `compute()`'s; callers asking at once share one computation. */
  get(key: string, compute: () => Promise<Computed<T>>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit && this.now() - hit.at < TTL_MS) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.value;
    }
    if (hit) this.drop(key);
    const entry: Entry<T> = { at: this.now(), bytes: 0, value: Promise.resolve(undefined as T) };
    entry.value = compute().then(
      (c) => {
        if (this.entries.get(key) === entry) {
          if (c.keep && c.bytes <= MAX_BYTES / 4) {
            entry.bytes = c.bytes;
            this.bytes += c.bytes;
            this.evict();
          } else this.drop(key);
        }
        return c.value;
      },
      (err: unknown) => {
        if (this.entries.get(key) === entry) this.drop(key);
        throw err;
      },
    );
    this.entries.set(key, entry);
    return entry.value;
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  private drop(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.bytes -= e.bytes;
    this.entries.delete(key);
  }

  private evict(): void {
    for (const key of this.entries.keys()) {
      if (this.bytes <= MAX_BYTES && this.entries.size <= MAX_ENTRIES) break;
      this.drop(key);
    }
  }
}
