// What a ColBench-mini task is made of (tasks/mini.ts generates them): the facts a template withholds, the
// template itself, and the record of withheld facts a generated task carries in its meta, read back by the
// collaborators and the scripted agents.
import type { TaskRecord } from './model.ts';

/** A uniform draw in [0, 1), as createRng (random.ts) returns it. */
export type Rng = () => number;

export type FactValue = number | string | boolean;

export interface FactSpec {
  /** Name of the constant in the reference. */
  key: string;
  kind: 'number' | 'string' | 'boolean' | 'choice';
  /** The allowed values of a 'choice' fact. */
  options?: readonly string[];
  /** What the constant means; written next to it in the reference, so a collaborator can explain it. */
  comment: string;
  /** Natural ways to ask about it (one is picked per task). */
  questions: readonly string[];
  /** What an agent that does not ask would most likely assume. */
  guess: FactValue;
  /** Values the generator draws from; the guess is never among them unless the fact is boolean or a choice. */
  pool: readonly FactValue[];
}

export interface WithheldFact {
  key: string;
  question: string;
  /** The true value as a Python literal. */
  answer: string;
}

export interface MiniMeta {
  template: string;
  functionName: string;
  withheld: WithheldFact[];
}

export interface MiniTemplate {
  id: string;
  facts: readonly FactSpec[];
  /**
   * The function's name, one per template. It is given only in the description, and a wrong name fails every
   * test; the ~1M-parameter starter never learnt to copy it (it picked one of three names a template by chance:
   * 20 % right, bench/HISTORY.md), so with several names a game's score was mostly that lottery.
   */
  functionName: string;
  /** Argument list of the signature (without parentheses). */
  params: string;
  requests: readonly string[];
  /** Python source of the function that uses the given fact values (the reference when they are the truth). */
  build(functionName: string, values: Record<string, FactValue>): string;
  /** Ten argument lists (Python source, without the function name) that exercise every fact. */
  testArgs(rng: Rng, values: Record<string, FactValue>): string[];
}

/** The ColBench-mini facts of a task, or undefined when it is not a ColBench-mini task. */
export function miniMeta(task: Pick<TaskRecord, 'meta'>): MiniMeta | undefined {
  const m = task.meta as Partial<MiniMeta> | undefined;
  if (!m || typeof m.template !== 'string' || typeof m.functionName !== 'string' || !Array.isArray(m.withheld))
    return undefined;
  return m as MiniMeta;
}

/** The guesses an agent that never asks would make, as a full value set for `build`. */
export function guessedValues(template: MiniTemplate): Record<string, FactValue> {
  return Object.fromEntries(template.facts.map((f) => [f.key, f.guess]));
}
