import { describe, expect, it } from 'vitest';
import { builtinSplit, builtinTasks } from '../../tasks/library.ts';
import { BUILTIN_BACKEND_TASKS } from '../../tasks/builtin/backend.ts';
import { BUILTIN_FRONTEND_TASKS, TAILWIND_LINK } from '../../tasks/builtin/frontend.ts';
import { evaluateBackendBatch } from '../../tasks/backend-eval.ts';
import type { BackendTask } from '../../tasks/model.ts';
import { haveBackendSample, sampleReferences } from '../helpers/colbench-sample.ts';

const SIGNATURE = /The signature of the function is: (def \w+\([^)]*\))$/;

describe('built-in backend tasks', () => {
  const tasks = builtinTasks({ kind: 'backend' }).filter((t): t is BackendTask & typeof t => t.kind === 'backend');

  it('has at least 40, with unique slugs and function names', () => {
    expect(tasks.length).toBeGreaterThanOrEqual(40);
    expect(new Set(tasks.map((t) => t.externalId)).size).toBe(tasks.length);
    const names = tasks.map((t) => /^def (\w+)/m.exec(t.reference)?.[1]);
    expect(new Set(names).size).toBe(tasks.length);
  });

  it('ends every description with the signature of its reference, and has ten calls of that function', () => {
    for (const t of tasks) {
      const sig = SIGNATURE.exec(t.description);
      expect(sig, t.externalId).not.toBeNull();
      const defLine = /^def [^\n]*\)/m.exec(t.reference)?.[0];
      expect(sig?.[1], t.externalId).toBe(defLine);
      const name = /^def (\w+)/.exec(defLine ?? '')?.[1];
      expect(t.testCases, t.externalId).toHaveLength(10);
      for (const call of t.testCases) expect(call.startsWith(`${name}(`), `${t.externalId}: ${call}`).toBe(true);
      // Standard library only.
      for (const m of t.reference.matchAll(/^(?:from|import) (\w+)/gm))
        expect(['math', 're', 'datetime'], t.externalId).toContain(m[1]);
    }
  });

  // Reported as skipped (not as passed) on a fresh clone without the samples (test/helpers/colbench-sample.ts).
  it.skipIf(!haveBackendSample())('shares no function name with the ColBench sample', () => {
    const theirs = new Set(sampleReferences().map((r) => /def\s+(\w+)/.exec(r)?.[1]));
    for (const t of tasks) expect(theirs.has(/^def (\w+)/m.exec(t.reference)?.[1]), t.externalId).toBe(false);
  });

  it('scores its own reference 1.0 in the sandbox, never returning None, and fails when a constant changes', async () => {
    const items: { task: BackendTask; answer: string; label: string; mutant: boolean }[] = [];
    for (const t of tasks) {
      items.push({ task: t, answer: t.reference, label: t.externalId, mutant: false });
      // Every named numeric constant is a hidden detail: the tests must notice when it is different.
      for (const m of t.reference.matchAll(/^([A-Z][A-Z0-9_]*) = (-?\d+(?:\.\d+)?)(?=\s|$)/gm)) {
        const v = Number(m[2]);
        const changed = Number.isInteger(v) ? v + 1 : Math.round(v * 1500) / 1000;
        items.push({
          task: t,
          answer: t.reference.replace(m[0], `${m[1]} = ${changed}`),
          label: `${t.externalId} ${m[1]}=${changed}`,
          mutant: true,
        });
      }
    }
    expect(items.filter((i) => i.mutant).length).toBeGreaterThan(50);
    const results = await evaluateBackendBatch(items, { concurrency: 2 });
    results.forEach((r, i) => {
      const item = items[i]!;
      if (item.mutant) {
        expect(r.score, item.label).toBeLessThan(1);
      } else {
        expect(r.error, item.label).toBeUndefined();
        expect(r.score, item.label).toBe(1);
        for (const test of r.tests) expect(test.expected, `${item.label}: ${test.call}`).not.toBe('None');
        // Ten calls that all return the same thing would not tell answers apart.
        expect(new Set(r.tests.map((x) => x.expected)).size, item.label).toBeGreaterThanOrEqual(2);
      }
    });
  });
});

describe('built-in frontend tasks', () => {
  const tasks = builtinTasks({ kind: 'frontend' });
  const VOID = new Set([
    'meta',
    'link',
    'img',
    'input',
    'br',
    'hr',
    'source',
    'area',
    'base',
    'col',
    'embed',
    'param',
    'track',
    'wbr',
  ]);

  it('has at least 15 complete pages with the Tailwind 2.2.19 link and picsum images only', () => {
    expect(tasks.length).toBeGreaterThanOrEqual(15);
    expect(new Set(tasks.map((t) => t.externalId)).size).toBe(tasks.length);
    for (const t of tasks) {
      const html = t.reference;
      expect(html.startsWith('<!DOCTYPE html>'), t.externalId).toBe(true);
      expect(html).toContain(TAILWIND_LINK);
      expect(t.description.length).toBeLessThan(200);
      expect(t.description).not.toContain('\n');
      for (const m of html.matchAll(/\b(?:src|href)="(https?:[^"]+)"/g)) {
        expect(
          m[1]!.startsWith('https://picsum.photos/') ||
            m[1] === 'https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css',
          `${t.externalId}: ${m[1]}`,
        ).toBe(true);
      }
      expect((html.match(/<img\b/g) ?? []).length, t.externalId).toBeGreaterThan(0);
      // Every element is closed, in order.
      const stack: string[] = [];
      for (const m of html.matchAll(/<(\/?)([a-zA-Z][a-zA-Z0-9]*)\b[^>]*?(\/?)>/g)) {
        const [, closing, rawTag] = m;
        const tag = rawTag!.toLowerCase();
        if (VOID.has(tag)) continue;
        if (closing) expect(stack.pop(), `${t.externalId}: </${tag}>`).toBe(tag);
        else stack.push(tag);
      }
      expect(stack, t.externalId).toEqual([]);
      expect(html).toMatch(/<title>[^<]+<\/title>/);
    }
  });

  it('uses only Tailwind classes that exist in 2.2.19 (or none at all)', async () => {
    const { readFileSync } = await import('node:fs');
    const css = readFileSync(new URL('../../node_modules/tailwindcss/dist/tailwind.min.css', import.meta.url), 'utf8');
    const known = new Set<string>();
    for (const m of css.matchAll(/\.((?:[a-z0-9-]|\\[:./])+)/g)) known.add(m[1]!.replace(/\\/g, ''));
    const missing = new Set<string>();
    for (const t of BUILTIN_FRONTEND_TASKS) {
      for (const m of t.reference.matchAll(/class="([^"]+)"/g))
        for (const c of m[1]!.split(/\s+/)) if (c && !known.has(c)) missing.add(`${t.slug}: ${c}`);
    }
    expect([...missing]).toEqual([]);
  });
});

describe('built-in split', () => {
  it('is stable and puts roughly a fifth of each kind in test', () => {
    const a = builtinTasks();
    const b = builtinTasks();
    expect(a.map((t) => [t.externalId, t.split])).toEqual(b.map((t) => [t.externalId, t.split]));
    for (const t of a) expect(t.split).toBe(builtinSplit(t.externalId));
    for (const kind of ['backend', 'frontend'] as const) {
      const ts = a.filter((t) => t.kind === kind);
      const share = ts.filter((t) => t.split === 'test').length / ts.length;
      expect(share, kind).toBeGreaterThan(0.1);
      expect(share, kind).toBeLessThan(0.35);
    }
    expect(builtinTasks({ split: 'test' }).every((t) => t.split === 'test')).toBe(true);
    expect(a.every((t) => t.source === 'builtin')).toBe(true);
    expect(BUILTIN_BACKEND_TASKS.length + BUILTIN_FRONTEND_TASKS.length).toBe(a.length);
  });
});
