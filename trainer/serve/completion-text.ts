// trainer/serve/: serving a policy (engine contract, llama.cpp engine, GGUF files, OpenAI-compatible server).
// Files here may import tasks/, prisma/ and trainer/ only (and their npm dependencies).
//
// The text of a completion as its tokens stream in, cut at stop strings (trainer/model/stop-strings.ts), for the
// llama.cpp engine (llama-engine.ts).
import { StopMatcher } from '../model/stop-strings.ts';

/**
 * Streams a completion's text as it grows, holding back what may still turn into a stop string or a UTF-8
 * character. The text is decoded from the token ids by the model's tokenizer; ids before `anchor` are already
 * text (`stable`) and were cut at a character boundary, so only the tail is decoded again.
 */
export class CompletionText {
  private readonly ids: number[] = [];
  private anchor = 0;
  private stable = '';
  private emitted = 0;
  private readonly stops: StopMatcher;

  constructor(
    private readonly decode: (ids: number[]) => string,
    stops: readonly string[],
  ) {
    this.stops = new StopMatcher(stops);
  }

  /** Adds a token; returns the text it releases, and whether a stop string ended the completion. */
  push(id: number): { text: string; stopped: boolean } {
    this.ids.push(id);
    const tail = this.decode(this.ids.slice(this.anchor));
    const full = this.stable + tail;
    // Byte-level tokens split characters: a trailing U+FFFD may still become a character.
    let partial = 0;
    while (partial < 3 && partial < tail.length && tail[tail.length - 1 - partial] === '\uFFFD') partial++;
    if (partial === 0) {
      this.stable = full;
      this.anchor = this.ids.length;
    }
    const match = this.stops.find(full);
    if (match) return { text: this.release(full, match.at), stopped: true };
    return {
      text: this.release(full, full.length - Math.max(this.stops.pendingLength(full), partial)),
      stopped: false,
    };
  }

  /** Everything not yet released (the end of a completion that no stop string cut). */
  flush(): string {
    const full = this.stable + (this.anchor < this.ids.length ? this.decode(this.ids.slice(this.anchor)) : '');
    return this.release(full, full.length);
  }

  private release(full: string, end: number): string {
    if (end <= this.emitted) return '';
    const piece = full.slice(this.emitted, end);
    this.emitted = end;
    return piece;
  }
}
