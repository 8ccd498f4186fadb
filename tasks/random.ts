// The one seeded random generator of the project (mulberry32, 32 bits of state), used wherever a result must be
// reproducible from a seed: task generation, batch order, candidate sampling, token sampling. Its whole state is
// one number, so a training run's progress record can carry it and a resumed run continues the same stream.
import { fnv1a } from './library.ts';

export class Rng {
  constructor(public state: number) {
    this.state = state >>> 0;
  }

  /** A stream for one purpose, derived from a seed and labels (e.g. the phase and the epoch). */
  static derive(seed: number, ...labels: (string | number)[]): Rng {
    return new Rng(fnv1a(`${seed}:${labels.join(':')}`));
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Shuffles in place (Fisher-Yates) and returns the array. */
  shuffle<T>(xs: T[]): T[] {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [xs[i], xs[j]] = [xs[j]!, xs[i]!];
    }
    return xs;
  }
}

/** The generator as a plain function, started from `seed` as it is. */
export function createRng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

/** splitmix32 step: decorrelates nearby seeds (seed, seed + 1, ...) before they seed the generator. */
function mix(x: number): number {
  x = (x + 0x9e3779b9) | 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/** Independent streams from one seed (e.g. one per sequence of a batch), nearby seeds decorrelated. */
export function seededRandom(seed: number, stream = 0): () => number {
  return createRng(mix(mix(seed >>> 0) ^ Math.imul(stream + 1, 0x27d4eb2d)));
}

/**
 * The seeds of a seeded run of games, for every path that plays them (in-process batches, served agents): game
 * i of a run seeded `seed` starts from gameSeed(seed, i) and samples its k-th agent reply with replySeed(base,
 * k). A game then draws the same random numbers however it is played and whatever plays beside it, and two
 * policies playing the same games draw the same ones: common random numbers, so that their paired difference is
 * the policies' and less the draws'.
 */
export function gameSeed(seed: number, game: number): number {
  return (seed + 1000 * game) >>> 0;
}

/** The seed of agent reply k (0-based) of a game whose base seed is `base` (see gameSeed). */
export function replySeed(base: number, reply: number): number {
  return (base + reply) >>> 0;
}
