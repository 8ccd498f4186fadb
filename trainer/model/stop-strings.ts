// Stop strings in a completion that grows a token at a time: the one search used by batched generation
// (generate.ts) and by the llama.cpp serving engine's streamed text (trainer/serve/llama-engine.ts).

export interface StopMatch {
  /** Where the stop string starts in the text: the completion is the text before it. */
  at: number;
  stop: string;
}

/**
 * Finds the earliest stop string in a text that only grows at its end, searching each part of it about once.
 * Among stops that start at the same place, the first in `stops` wins. Callers refuse empty stop strings.
 */
export class StopMatcher {
  private searched = 0;
  private readonly longest: number;

  constructor(readonly stops: readonly string[]) {
    this.longest = stops.reduce((m, s) => Math.max(m, s.length), 0);
  }

  /** The earliest stop string in `text` (the whole completion so far), or undefined. */
  find(text: string): StopMatch | undefined {
    // Back off by the longest stop (a match may straddle the old end) and a few characters more, since an
    // incomplete UTF-8 sequence at the old end decoded to replacement characters that are now a real one.
    const from = Math.max(0, this.searched - this.longest - 3);
    this.searched = text.length;
    let match: StopMatch | undefined;
    for (const stop of this.stops) {
      const at = text.indexOf(stop, from);
      if (at >= 0 && (match === undefined || at < match.at)) match = { at, stop };
    }
    return match;
  }

  /** Length of the longest end of `text` that begins some stop string: what a stream must hold back. */
  pendingLength(text: string): number {
    let hold = 0;
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, text.length); k > hold; k--) {
        if (text.endsWith(s.slice(0, k))) {
          hold = k;
          break;
        }
      }
    }
    return hold;
  }
}
