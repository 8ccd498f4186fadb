// ColBench-mini: procedurally generated backend tasks in ColBench's format whose descriptions leave out what only
// the hidden reference knows (constants, thresholds, units, rounding, argument order, edge-case results). Every
// withheld fact is a named constant with a descriptive comment at the top of the reference, so a collaborator
// who reads the code (a person, or the rule-based simulator) can answer a question about it, and the test calls
// are chosen so that a wrong guess about any of them fails tests.
// This module is the generator: it draws a template (mini-templates.ts), the facts' values and the wording for
// each task; mini-model.ts says what a template and a task's record of withheld facts are.
import { createRng } from './random.ts';
import type { TaskRecord, TaskSplit } from './model.ts';
import { fnv1a } from './library.ts';
import type { FactSpec, FactValue, MiniMeta, MiniTemplate, Rng, WithheldFact } from './mini-model.ts';
import { pick, py, randInt, valueOf } from './mini-source.ts';
import { MINI_TEMPLATES, UNITS, miniTemplate } from './mini-templates.ts';

const OPENERS = ['', '', 'Hi! ', 'Hello, quick one. ', 'Hey there. ', 'Hi, I could use some help. ', 'Good morning! '];
const PRODUCTS = ['handmade candles', 'loose-leaf tea', 'board games', 'yarn', 'art prints', 'soap', 'coffee beans'];

/** Decimal places of a number as written (0.8 -> 1, 4.25 -> 2). */
function decimalsOf(x: number): number {
  const s = String(x);
  const dot = s.indexOf('.');
  return dot < 0 ? 0 : s.length - dot - 1;
}

/**
 * A number fact's value drawn uniformly from its pool's range at the pool's precision (hundreds of values
 * instead of four to eight), never the common guess. The ranges of the templates' pools keep their order
 * (grade cut-offs, length limits), so the reference stays a sensible function.
 */
function variedNumber(rng: Rng, fact: FactSpec): number {
  const pool = fact.pool as readonly number[];
  const scale = 10 ** Math.max(...pool.map(decimalsOf));
  const lo = Math.round(Math.min(...pool) * scale);
  const hi = Math.round(Math.max(...pool) * scale);
  for (;;) {
    const v = randInt(rng, lo, hi) / scale;
    if (v !== fact.guess || lo === hi) return v;
  }
}

function sampleValues(rng: Rng, template: MiniTemplate, varied = false): Record<string, FactValue> {
  const values: Record<string, FactValue> = {};
  for (const f of template.facts)
    values[f.key] = varied && f.kind === 'number' ? variedNumber(rng, f) : pick(rng, f.pool);
  if (template.id === 'distance-units') {
    // Same unit in and out would make the task trivial; the common guess (miles to km) would make asking moot.
    while (
      values.INPUT_UNIT === values.OUTPUT_UNIT ||
      (values.INPUT_UNIT === 'miles' && values.OUTPUT_UNIT === 'kilometers')
    ) {
      values.OUTPUT_UNIT = pick(rng, UNITS);
    }
  }
  return values;
}

export interface GenerateMiniOptions {
  seed: number;
  count: number;
  /** Put every task in this split; by default about one in five goes to test, by a hash of its id. */
  split?: TaskSplit;
  /** Restrict to some templates (ids). */
  templates?: readonly string[];
  /**
   * Varied tasks (for pre-training, never for evaluation): number facts drawn across their pools' ranges, so
   * that copying the told values is the only way to get them right. Their ids (`mini-varied:SEED:I`) never
   * collide with the standard tasks'.
   */
  varied?: boolean;
}

/** Makes `count` tasks; task i depends only on (seed, i), so a longer run extends a shorter one. */
export function generateMiniTasks(options: GenerateMiniOptions): TaskRecord[] {
  const { seed, count } = options;
  if (!Number.isInteger(seed)) throw new Error(`seed must be an integer, got ${seed}`);
  if (!Number.isInteger(count) || count < 0) throw new Error(`count must be a non-negative integer, got ${count}`);
  const templates = options.templates ? options.templates.map(miniTemplate) : MINI_TEMPLATES;
  if (templates.length === 0) throw new Error('no templates selected');
  const tasks: TaskRecord[] = [];
  for (let i = 0; i < count; i++) {
    const externalId = `${options.varied ? 'mini-varied' : 'mini'}:${seed}:${i}`;
    const rng = createRng(fnv1a(externalId));
    const template = pick(rng, templates);
    const functionName = template.functionName;
    const values = sampleValues(rng, template, options.varied);
    const request = pick(rng, template.requests).replace('{product}', pick(rng, PRODUCTS));
    // Drawn from a stream of its own so that the wording varies without changing any value or test.
    const opener = pick(createRng(fnv1a(`${externalId}:opener`)), OPENERS);
    const description = `${opener}${request} The signature of the function is: def ${functionName}(${template.params})`;
    const reference = template.build(functionName, values);
    const testCases = template.testArgs(rng, values).map((args) => `${functionName}(${args})`);
    const withheld: WithheldFact[] = template.facts.map((f) => ({
      key: f.key,
      question: pick(rng, f.questions),
      answer: py(valueOf(values, f.key)),
    }));
    const meta: MiniMeta = { template: template.id, functionName, withheld };
    const split = options.split ?? (fnv1a(`sweetloop-split:${externalId}`) % 5 === 0 ? 'test' : 'train');
    tasks.push({
      kind: 'backend',
      description,
      reference,
      testCases,
      source: 'generated',
      externalId,
      split,
      meta: { ...meta },
    });
  }
  return tasks;
}
