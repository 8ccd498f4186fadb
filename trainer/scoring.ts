// Scores a finished game with the task's own evaluator (sandboxed tests for backend, rendered screenshots for
// frontend) as an EvaluationOutcome ready to store. Chromium starts only when a frontend task comes up.
import type { TaskContent } from '../tasks/model.ts';
import type { Renderer } from '../tasks/render.ts';
import type { EvaluationOutcome } from './store.ts';

export interface ScorerOptions {
  bwrapPath?: string;
  pythonPath?: string;
  chromiumPath?: string;
}

export interface Scorer {
  evaluate(task: TaskContent, answer: string): Promise<EvaluationOutcome>;
  close(): Promise<void>;
}

export function createScorer(opts: ScorerOptions = {}): Scorer {
  let renderer: Promise<Renderer> | null = null;
  return {
    async evaluate(task, answer) {
      if (task.kind === 'backend') {
        const { evaluateBackend, BACKEND_EVALUATOR_VERSION } = await import('../tasks/backend-eval.ts');
        const r = await evaluateBackend(task, answer, {
          ...(opts.bwrapPath ? { bwrapPath: opts.bwrapPath } : {}),
          ...(opts.pythonPath ? { pythonPath: opts.pythonPath } : {}),
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
      const [{ evaluateFrontend, FRONTEND_EVALUATOR_VERSION }, { Renderer }] = await Promise.all([import('../tasks/frontend-eval.ts'), import('../tasks/render.ts')]);
      renderer ??= Renderer.launch(opts.chromiumPath ? { executablePath: opts.chromiumPath } : {});
      const r = await evaluateFrontend(task, answer, { renderer: await renderer });
      return {
        score: r.score,
        success: r.success,
        detail: { ...r.detail, ...(r.error ? { error: r.error } : {}) },
        metric: r.metric,
        evaluatorVersion: FRONTEND_EVALUATOR_VERSION,
      };
    },
    async close() {
      if (renderer) await (await renderer.catch(() => null))?.close();
      renderer = null;
    },
  };
}
