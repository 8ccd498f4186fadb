// Scores an answer with its task's own evaluator — sandboxed tests for backend tasks, rendered screenshots for
// frontend ones — as an outcome ready to store in the Evaluation table. The bot, the simulator and the trainer
// all score through this one function, so a session is judged the same way whoever played it.
import type { Logger } from './logger.ts';
import type { TaskContent } from './model.ts';
import type { Renderer } from './render.ts';
import type { ImageEmbedder } from './similarity.ts';

export interface EvaluationOutcome {
  /** Backend: fraction of tests passed. Frontend: similarity in [0, 1]. */
  score: number;
  success: boolean;
  testsPassed?: number;
  testsTotal?: number;
  detail: unknown;
  /** Frontend: which similarity metric produced `score`. */
  metric?: string;
  evaluatorVersion: string;
}

export interface ScorerOptions {
  bwrapPath?: string | undefined;
  pythonPath?: string | undefined;
  chromiumPath?: string | undefined;
  /** A renderer owned by the caller (not closed by the scorer); otherwise Chromium starts on the first frontend task. */
  renderer?: Renderer | null | undefined;
  /** CLIP (or another embedder) for the frontend metric; without it the weight-free pixel metric is used. */
  embedder?: ImageEmbedder | undefined;
  /** Told once how the sandbox bounds memory, and once for each reason it refuses to start. */
  log?: Logger | undefined;
}

export interface Scorer {
  /** `turns`: the whole game, for a family whose score depends on it (tasks/credit.ts, design v2); others ignore it. */
  evaluate(
    task: TaskContent,
    answer: string,
    turns?: readonly { role: string; content: string }[],
  ): Promise<EvaluationOutcome>;
  close(): Promise<void>;
}

export function createScorer(opts: ScorerOptions = {}): Scorer {
  let ownRenderer: Promise<Renderer> | null = null;
  // The last sandbox state logged: a new line only when it changes (refused, working, refused for another reason).
  let sandboxState = '';
  const once = (state: string, say: () => void): void => {
    if (state === sandboxState) return;
    sandboxState = state;
    say();
  };
  const renderer = async (): Promise<Renderer> => {
    if (opts.renderer) return opts.renderer;
    if (opts.renderer === null)
      throw new Error('frontend evaluation needs the page renderer (Chromium), which is not available');
    const { Renderer } = await import('./render.ts');
    ownRenderer ??= Renderer.launch(opts.chromiumPath ? { executablePath: opts.chromiumPath } : {});
    return ownRenderer;
  };
  return {
    async evaluate(task, answer) {
      if (task.kind === 'backend') {
        const { evaluateBackend, BACKEND_EVALUATOR_VERSION } = await import('./backend-eval.ts');
        const r = await evaluateBackend(task, answer, {
          ...(opts.bwrapPath ? { bwrapPath: opts.bwrapPath } : {}),
          ...(opts.pythonPath ? { pythonPath: opts.pythonPath } : {}),
          onSandbox: (s) =>
            once(`ready ${s.memoryDetail}`, () =>
              opts.log?.info({ memoryMode: s.memoryMode, memory: s.memoryDetail }, 'sandbox ready for backend answers'),
            ),
        }).catch((err: Error) => {
          if (err.name === 'SandboxUnavailableError') {
            once(`refused ${err.message}`, () =>
              opts.log?.error(
                { err: err.message },
                'the sandbox refuses to start: backend answers are kept and scored once it works',
              ),
            );
          }
          throw err;
        });
        return {
          score: r.score,
          success: r.success,
          testsPassed: r.passed,
          testsTotal: r.total,
          detail: { tests: r.tests, ...(r.error ? { error: r.error } : {}) },
          evaluatorVersion: BACKEND_EVALUATOR_VERSION,
        };
      }
      const { evaluateFrontend, FRONTEND_EVALUATOR_VERSION } = await import('./frontend-eval.ts');
      const r = await evaluateFrontend(task, answer, {
        renderer: await renderer(),
        ...(opts.embedder ? { embedder: opts.embedder } : {}),
      });
      return {
        score: r.score,
        success: r.success,
        detail: { ...r.detail, ...(r.error ? { error: r.error } : {}) },
        metric: r.metric,
        evaluatorVersion: FRONTEND_EVALUATOR_VERSION,
      };
    },
    async close() {
      if (ownRenderer) await (await ownRenderer.catch(() => null))?.close();
      ownRenderer = null;
    },
  };
}
