// A one-consumer channel of decoded tokens: the producer (an engine's scheduler) pushes tokens and finally a
// result or an error; the consumer (the HTTP server) iterates the tokens and awaits the result. This is the
// EngineStream of engine.ts in its simplest honest form; imports only engine.ts's types.
import type { EngineResult, EngineStream, EngineToken } from './engine-contract.ts';

export class TokenChannel implements EngineStream {
  private readonly buffered: EngineToken[] = [];
  private waiting: ((v: IteratorResult<EngineToken>) => void) | null = null;
  private failWaiting: ((e: unknown) => void) | null = null;
  private ended = false;
  private error: unknown = undefined;
  private settle!: { resolve: (r: EngineResult) => void; reject: (e: unknown) => void };
  readonly result: Promise<EngineResult>;

  constructor() {
    this.result = new Promise<EngineResult>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    // A consumer that only iterates and never awaits `result` must not see an unhandled rejection.
    this.result.catch(() => {});
  }

  push(token: EngineToken): void {
    if (this.ended) return;
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = this.failWaiting = null;
      w({ value: token, done: false });
    } else this.buffered.push(token);
  }

  end(result: EngineResult): void {
    if (this.ended) return;
    this.ended = true;
    this.settle.resolve(result);
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = this.failWaiting = null;
      w({ value: undefined, done: true });
    }
  }

  fail(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.error = error ?? new Error('engine failed');
    this.settle.reject(this.error);
    if (this.failWaiting) {
      const f = this.failWaiting;
      this.waiting = this.failWaiting = null;
      f(this.error);
    }
  }

  get finished(): boolean {
    return this.ended;
  }

  [Symbol.asyncIterator](): AsyncIterator<EngineToken> {
    return {
      next: () => {
        const t = this.buffered.shift();
        if (t) return Promise.resolve({ value: t, done: false });
        if (this.ended)
          return this.error !== undefined
            ? Promise.reject(this.error)
            : Promise.resolve({ value: undefined, done: true });
        return new Promise<IteratorResult<EngineToken>>((resolve, reject) => {
          this.waiting = resolve;
          this.failWaiting = reject;
        });
      },
    };
  }
}
