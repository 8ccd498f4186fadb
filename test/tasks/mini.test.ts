import { describe, expect, it } from 'vitest';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { miniMeta } from '../../tasks/mini-model.ts';
import { py } from '../../tasks/mini-source.ts';
import { MINI_TEMPLATES, miniTemplate } from '../../tasks/mini-templates.ts';
import { evaluateBackendBatch } from '../../tasks/backend-eval.ts';
import type { BackendTask, TaskRecord } from '../../tasks/model.ts';

const backend = (ts: TaskRecord[]) => ts.filter((t): t is TaskRecord & BackendTask => t.kind === 'backend');

describe('ColBench-mini generator', () => {
  it('is deterministic in the seed, and a longer run extends a shorter one', () => {
    const a = generateMiniTasks({ seed: 42, count: 30 });
    const b = generateMiniTasks({ seed: 42, count: 30 });
    expect(b).toEqual(a);
    expect(generateMiniTasks({ seed: 42, count: 10 })).toEqual(a.slice(0, 10));
    const c = generateMiniTasks({ seed: 43, count: 30 });
    expect(c.map((t) => t.reference)).not.toEqual(a.map((t) => t.reference));
    expect(a.map((t) => t.externalId)).toEqual(Array.from({ length: 30 }, (_, i) => `mini:42:${i}`));
    expect(a.every((t) => t.source === 'generated' && t.kind === 'backend')).toBe(true);
  });

  it('uses every template, and honours split and template choices', () => {
    const ts = generateMiniTasks({ seed: 3, count: 120 });
    expect(new Set(ts.map((t) => miniMeta(t)?.template))).toEqual(new Set(MINI_TEMPLATES.map((t) => t.id)));
    const tests = ts.filter((t) => t.split === 'test').length / ts.length;
    expect(tests).toBeGreaterThan(0.1);
    expect(tests).toBeLessThan(0.35);
    expect(generateMiniTasks({ seed: 3, count: 5, split: 'test' }).every((t) => t.split === 'test')).toBe(true);
    expect(
      generateMiniTasks({ seed: 3, count: 12, templates: ['tag-line'] }).every(
        (t) => miniMeta(t)?.template === 'tag-line',
      ),
    ).toBe(true);
  });

  it('rejects bad options with a clear error', () => {
    expect(() => generateMiniTasks({ seed: 1.5, count: 3 })).toThrow(/seed/);
    expect(() => generateMiniTasks({ seed: 1, count: -1 })).toThrow(/count/);
    expect(() => generateMiniTasks({ seed: 1, count: 1, templates: ['nope'] })).toThrow(
      /unknown ColBench-mini template "nope"/,
    );
  });

  it('draws hidden values that differ from the common guesses', () => {
    // Asking pays only when guessing is wrong: numbers and strings never equal the guess.
    for (const t of generateMiniTasks({ seed: 5, count: 80 })) {
      const meta = miniMeta(t)!;
      const template = miniTemplate(meta.template);
      let wrong = 0;
      for (const f of template.facts) {
        const truth = meta.withheld.find((w) => w.key === f.key)!.answer;
        if (truth !== py(f.guess)) wrong++;
        else expect(['boolean', 'choice']).toContain(f.kind);
      }
      expect(wrong, t.externalId).toBeGreaterThanOrEqual(1);
    }
  });

  it("makes varied tasks for pre-training: numbers across their pools' ranges under the template's name, still sound", async () => {
    const varied = generateMiniTasks({ seed: 11, count: 120, varied: true });
    expect(varied.map((t) => t.externalId)).toEqual(Array.from({ length: 120 }, (_, i) => `mini-varied:11:${i}`));
    expect(generateMiniTasks({ seed: 11, count: 120, varied: true })).toEqual(varied);
    // One name a template, varied or not: a model that cannot copy a name can still remember nine.
    for (const t of varied) expect(miniMeta(t)!.functionName).toBe(miniTemplate(miniMeta(t)!.template).functionName);
    const numbers = new Map<string, Set<number>>();
    for (const t of varied) {
      const meta = miniMeta(t)!;
      const template = miniTemplate(meta.template);
      expect(t.description.endsWith(`def ${meta.functionName}(${template.params})`)).toBe(true);
      for (const f of template.facts.filter((x) => x.kind === 'number')) {
        const v = Number(meta.withheld.find((w) => w.key === f.key)!.answer);
        const pool = f.pool as number[];
        expect(v).toBeGreaterThanOrEqual(Math.min(...pool));
        expect(v).toBeLessThanOrEqual(Math.max(...pool));
        expect(v).not.toBe(f.guess);
        const decimals = Math.max(...pool.map((x) => (String(x).split('.')[1] ?? '').length));
        expect(Math.abs(v * 10 ** decimals - Math.round(v * 10 ** decimals))).toBeLessThan(1e-6);
        numbers.set(`${template.id}.${f.key}`, (numbers.get(`${template.id}.${f.key}`) ?? new Set()).add(v));
      }
    }
    // A wide fact (a threshold between 40 and 200 dollars) takes many more values than its pool of eight.
    expect(numbers.get('bulk-discount.DISCOUNT_THRESHOLD')!.size).toBeGreaterThan(8);
    // Varied references are still sound: every one passes its own tests with distinct expected values.
    const sample = backend(varied.slice(0, 36));
    const results = await evaluateBackendBatch(sample.map((task) => ({ task, answer: task.reference })));
    results.forEach((r, i) => {
      expect(r.score, sample[i]!.externalId).toBe(1);
      expect(new Set(r.tests.map((x) => x.expected)).size, sample[i]!.externalId).toBeGreaterThanOrEqual(2);
    });
  });
});
