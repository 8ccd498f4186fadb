// The templates, through tasks they generate: every withheld fact stands in the reference as a commented constant
// and stays out of the description, and each reference passes its own tests with results that tell values apart.
import { describe, expect, it } from 'vitest';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { miniMeta } from '../../tasks/mini-model.ts';
import { miniTemplate } from '../../tasks/mini-templates.ts';
import { evaluateBackendBatch } from '../../tasks/backend-eval.ts';
import type { BackendTask, TaskRecord } from '../../tasks/model.ts';

const backend = (ts: TaskRecord[]) => ts.filter((t): t is TaskRecord & BackendTask => t.kind === 'backend');

describe('ColBench-mini templates', () => {
  it('writes each withheld fact as a named, commented constant, and leaves it out of the description', () => {
    for (const t of backend(generateMiniTasks({ seed: 9, count: 60 }))) {
      const meta = miniMeta(t)!;
      const template = miniTemplate(meta.template);
      expect(
        t.description.endsWith(`The signature of the function is: def ${meta.functionName}(${template.params})`),
      ).toBe(true);
      expect(t.testCases).toHaveLength(10);
      expect(meta.withheld.map((w) => w.key)).toEqual(template.facts.map((f) => f.key));
      for (const w of meta.withheld) {
        expect(t.reference).toMatch(
          new RegExp(`^${w.key} = ${w.answer.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}  # \\S`, 'm'),
        );
        expect(t.description).not.toContain(w.key);
        if (w.answer.startsWith("'") && w.answer.length > 4) expect(t.description).not.toContain(w.answer.slice(1, -1));
        expect(w.question.endsWith('?')).toBe(true);
      }
    }
  });

  it('has references that score 1.0 on their own tests, never return None, and tell values apart', async () => {
    const ts = backend(generateMiniTasks({ seed: 21, count: 45 }));
    const results = await evaluateBackendBatch(ts.map((task) => ({ task, answer: task.reference })));
    results.forEach((r, i) => {
      expect(r.score, ts[i]!.externalId).toBe(1);
      for (const test of r.tests) expect(test.expected).not.toBe('None');
      expect(new Set(r.tests.map((x) => x.expected)).size, ts[i]!.externalId).toBeGreaterThanOrEqual(2);
    });
  });
});
