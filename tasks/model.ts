// The task model shared by everything that plays, scores or stores a ColBench task.
// A task is what the agent is asked (description) plus what only the collaborator and the evaluator see
// (the hidden reference, and for backend tasks the test calls).

export type TaskKind = 'backend' | 'frontend';
export type TaskSource = 'colbench' | 'builtin' | 'generated';
export type TaskSplit = 'train' | 'test';

export interface BackendTask {
  kind: 'backend';
  /** Vague request ending in "The signature of the function is: def ...". */
  description: string;
  /** Reference Python function source (ColBench `ground_truth`). */
  reference: string;
  /** Python call expressions, e.g. `f(1, 2)`; ColBench stores ten. Expected outputs come from the reference. */
  testCases: string[];
}

export interface FrontendTask {
  kind: 'frontend';
  /** One-line website idea. */
  description: string;
  /** Reference HTML page (Tailwind 2.2.19 classes). */
  reference: string;
}

export type TaskContent = BackendTask | FrontendTask;

/** A task with its provenance, as the library, importer and database exchange it. */
export type TaskRecord = TaskContent & {
  source: TaskSource;
  /** Identifier within the source (built-in slug, generator seed:index, ColBench line). */
  externalId: string;
  split: TaskSplit;
  /** Extras, e.g. the facts ColBench-mini withheld from the description. */
  meta?: Record<string, unknown>;
};
