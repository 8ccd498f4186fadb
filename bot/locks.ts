// Work on one session (or one person) runs one piece at a time, in arrival order: two messages or clicks
// handled at once could otherwise both see "no active session" or both append turn 5.
export class KeyedMutex {
  private tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    // Released in the first reaction to `next`, before the caller's: whoever awaited run() sees it free.
    const release = () => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
    const tail = next.then(release, release);
    this.tails.set(key, tail);
    return next;
  }

  isBusy(key: string): boolean {
    return this.tails.has(key);
  }
}
