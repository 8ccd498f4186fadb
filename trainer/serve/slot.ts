// The engine a server answers with, swappable while requests run: each request leases the engine that is current
// when it arrives and keeps it to the end, so a deploy sends new requests to the new engine while those already
// running finish on the old one, which is closed once its last lease is returned. Imports only engine.ts's types.
import type { ServingEngine } from './engine-contract.ts';

export interface EngineLease {
  readonly engine: ServingEngine;
  /** Idempotent. */
  release(): void;
}

export class EngineSlot {
  private current: ServingEngine | null;
  private readonly leases = new Map<ServingEngine, number>();
  private readonly drained = new Map<ServingEngine, () => void>();
  private closed = false;

  constructor(engine: ServingEngine | null = null) {
    this.current = engine;
  }

  /** The engine new requests go to, or null while none is loaded. */
  get engine(): ServingEngine | null {
    return this.current;
  }

  /** Leases the current engine (null while none is loaded or after close). */
  acquire(): EngineLease | null {
    const engine = this.current;
    if (!engine || this.closed) return null;
    this.leases.set(engine, (this.leases.get(engine) ?? 0) + 1);
    let released = false;
    return {
      engine,
      release: () => {
        if (released) return;
        released = true;
        const left = (this.leases.get(engine) ?? 1) - 1;
        if (left > 0) {
          this.leases.set(engine, left);
          return;
        }
        this.leases.delete(engine);
        this.drained.get(engine)?.();
      },
    };
  }

  /** Requests holding `engine` now. */
  inFlight(engine: ServingEngine): number {
    return this.leases.get(engine) ?? 0;
  }

  /**
   * Makes `next` the engine for new requests at once; resolves after the previous engine's requests have finished
   * and it has been closed.
   */
  async swap(next: ServingEngine): Promise<void> {
    if (this.closed) {
      await next.close();
      throw new Error('the engine slot is closed');
    }
    const old = this.current;
    this.current = next;
    if (old && old !== next) await this.retire(old);
  }

  private async retire(engine: ServingEngine): Promise<void> {
    if (this.inFlight(engine) > 0) {
      await new Promise<void>((resolve) => this.drained.set(engine, resolve));
      this.drained.delete(engine);
    }
    await engine.close();
  }

  /** No new leases; waits for running requests, then closes the engine. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const old = this.current;
    this.current = null;
    if (old) await this.retire(old);
  }
}
