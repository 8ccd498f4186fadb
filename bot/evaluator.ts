// How a session's answer is scored and how pages are shown: the engine receives these as functions, so the
// Discord bot, the console and the tests share one engine while the composition root picks the real parts.
import type { TaskContent } from '../tasks/model.ts';

export interface EvaluationOutcome {
  /** Backend: fraction of tests passed. Frontend: similarity in [0, 1]. */
  score: number;
  success: boolean;
  testsPassed?: number;
  testsTotal?: number;
  detail: unknown;
  metric?: string;
  evaluatorVersion: string;
}

export type Evaluate = (task: TaskContent, answer: string) => Promise<EvaluationOutcome>;

/** Renders an HTML page to a PNG screenshot. */
export type RenderPage = (html: string) => Promise<Buffer>;
