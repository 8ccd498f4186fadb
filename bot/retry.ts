// Database outages: an operation that failed because the database is unreachable is retried with back-off
// until it succeeds or the caller gives up, so a person's message is kept rather than lost. Other errors (a bad
// query, a refused value) are not retried: retrying would not change them.
import { isConnectionError } from '../prisma/errors.ts';

export interface RetryOptions {
  /** First wait in ms; doubles each time up to maxDelayMs. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Give up (re-throw the last error) after this long; default: 15 minutes. */
  giveUpAfterMs?: number;
  /** Called once, on the first failure, so the caller can tell the person to wait. */
  onWaiting?: (err: unknown) => void | Promise<void>;
  /** Called once the operation finally succeeded after waiting. */
  onRecovered?: () => void | Promise<void>;
  signal?: AbortSignal;
}

export async function withDbRetry<T>(fn: () => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const start = Date.now();
  let delay = options.initialDelayMs ?? 250;
  const maxDelay = options.maxDelayMs ?? 10_000;
  const giveUp = options.giveUpAfterMs ?? 15 * 60_000;
  let waited = false;
  for (;;) {
    try {
      const result = await fn();
      if (waited) await Promise.resolve(options.onRecovered?.()).catch(() => {});
      return result;
    } catch (err) {
      if (!isConnectionError(err) || Date.now() - start > giveUp || options.signal?.aborted) throw err;
      if (!waited) {
        waited = true;
        await Promise.resolve(options.onWaiting?.(err)).catch(() => {});
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, maxDelay);
    }
  }
}
