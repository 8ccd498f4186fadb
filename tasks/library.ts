// The built-in task set as TaskRecords. The split is a pure function of the slug, so adding or editing a task
// never moves any other task between train and test.
import type { TaskRecord, TaskSplit } from './model.ts';
import { BUILTIN_BACKEND_TASKS } from './builtin/backend.ts';
import { BUILTIN_FRONTEND_TASKS } from './builtin/frontend.ts';

/** 32-bit FNV-1a: tiny, stable across platforms and Node versions. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** About one task in five goes to test, chosen by a hash of its slug. */
export function builtinSplit(slug: string): TaskSplit {
  return fnv1a(`sweetloop-split:${slug}`) % 5 === 0 ? 'test' : 'train';
}

export function builtinTasks(options: { split?: TaskSplit; kind?: 'backend' | 'frontend' } = {}): TaskRecord[] {
  const records: TaskRecord[] = [];
  if (options.kind !== 'frontend') {
    for (const t of BUILTIN_BACKEND_TASKS) {
      records.push({
        kind: 'backend',
        description: t.description,
        reference: t.reference,
        testCases: [...t.tests],
        source: 'builtin',
        externalId: t.slug,
        split: builtinSplit(t.slug),
      });
    }
  }
  if (options.kind !== 'backend') {
    for (const t of BUILTIN_FRONTEND_TASKS) {
      records.push({
        kind: 'frontend',
        description: t.description,
        reference: t.reference,
        source: 'builtin',
        externalId: t.slug,
        split: builtinSplit(t.slug),
      });
    }
  }
  return options.split ? records.filter((r) => r.split === options.split) : records;
}
