// How a session's answer is scored and how pages are shown: the engine receives these as functions, so the
// Discord bot, the console and the tests share one engine while the composition root picks the real parts.
import type { TaskContent } from '../tasks/model.ts';
import type { EvaluationOutcome } from '../tasks/scorer.ts';

export type { EvaluationOutcome } from '../tasks/scorer.ts';

export type Evaluate = (task: TaskContent, answer: string) => Promise<EvaluationOutcome>;

/** Renders an HTML page to a PNG screenshot. */
export type RenderPage = (html: string) => Promise<Buffer>;
