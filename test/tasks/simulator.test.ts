import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../tasks/agent.ts';
import { readFact } from '../../tasks/expert.ts';
import { builtinTasks } from '../../tasks/library.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { miniMeta } from '../../tasks/mini-model.ts';
import { miniTemplate } from '../../tasks/mini-templates.ts';
import type { BackendTask, FrontendTask, TaskRecord } from '../../tasks/model.ts';
import { answerFromHtml, answerFromReference, createRuleSimulator } from '../../tasks/simulator.ts';
import { DONT_KNOW } from '../../tasks/facts.ts';
import { splitSentences } from '../../tasks/words.ts';
import { haveBackendSample, sampleReferences } from '../helpers/colbench-sample.ts';

const NONSENSE = 'Qwxyz flurbination schedule for the zorbles?';

function dialogueWith(description: string, question: string): ChatMessage[] {
  return [
    { role: 'system', content: 'rules' },
    { role: 'user', content: description },
    { role: 'assistant', content: question },
  ];
}

function expectShort(reply: string, cap: number): void {
  expect(reply.length).toBeLessThanOrEqual(cap);
  expect(splitSentences(reply).length).toBeLessThanOrEqual(2);
  // A cruder count, blind to quotes, as a second opinion where no quoted text is involved.
  if (!/['"`]/.test(reply)) expect(reply.split(/[.!?](?:\s|$)/).filter((s) => s.trim()).length).toBeLessThanOrEqual(2);
}

describe('rule-based simulator, backend', () => {
  const minis = generateMiniTasks({ seed: 77, count: 90 }) as (TaskRecord & BackendTask)[];

  it('finds every withheld ColBench-mini fact in the reference, so its reply carries the true value', async () => {
    for (const task of minis) {
      const meta = miniMeta(task)!;
      const template = miniTemplate(meta.template);
      const sim = createRuleSimulator(task);
      for (const w of meta.withheld) {
        const reply = await sim.reply(dialogueWith(task.description, w.question));
        expectShort(reply, 400);
        const spec = template.facts.find((f) => f.key === w.key)!;
        const value = readFact(spec, reply);
        expect(
          value === undefined
            ? undefined
            : typeof value === 'string'
              ? `'${value}'`
              : typeof value === 'boolean'
                ? value
                  ? 'True'
                  : 'False'
                : String(value),
          `${task.externalId} ${w.key}: ${reply}`,
        ).toBe(w.answer.replace(/\\'/g, "'"));
      }
    }
  });

  it('answers two questions in one message with two sentences', async () => {
    const task = minis.find((t) => miniMeta(t)!.template === 'grade-bands')!;
    const [a, b] = miniMeta(task)!.withheld;
    const reply = await createRuleSimulator(task).reply(
      dialogueWith(task.description, `Thanks. ${a!.question} ${b!.question}`),
    );
    expect(splitSentences(reply)).toHaveLength(2);
    expect(reply).toContain(a!.answer);
    expect(reply).toContain(b!.answer);
  });

  it('says it does not know when the code does not tell, and never invents a value', async () => {
    for (const task of minis.slice(0, 20)) {
      expect(await createRuleSimulator(task).reply(dialogueWith(task.description, NONSENSE))).toBe(DONT_KNOW);
      expect(await createRuleSimulator(task).reply(dialogueWith(task.description, 'Hello!'))).toBe(DONT_KNOW);
    }
    const ref = 'def area(w, h):\n    return w * h\n';
    expect(answerFromReference(ref, 'Should the result be rounded?')).toBe(DONT_KNOW);
    expect(answerFromReference(ref, 'What are the arguments, in order?')).toContain('w, h');
  });

  it('explains conditions, defaults, rounding and sorting in words, with constant values filled in', () => {
    const ref = [
      'LATE_LIMIT = 15  # minutes before a visit counts as late',
      '',
      'def visit_status(minutes_late, strict=False):',
      '    if minutes_late > LATE_LIMIT:',
      "        return 'late'",
      '    return round(minutes_late / 60, 1)',
      '',
      'def order(rows):',
      '    return sorted(rows, key=lambda r: r[1], reverse=True)',
    ].join('\n');
    expect(answerFromReference(ref, 'When does a visit count as late?')).toMatch(/15/);
    expect(answerFromReference(ref, 'What happens when strict is not given?')).toMatch(/defaults to False/);
    expect(answerFromReference(ref, 'How many decimal places?')).toMatch(/rounded to 1 decimal/);
    expect(answerFromReference(ref, 'In which order are rows sorted?')).toMatch(/descending/);
  });

  it('keeps replies within two sentences and 400 characters even for long references', () => {
    const long = `BIG = ${JSON.stringify('x'.repeat(600))}  # a very long string. It has sentences! Many? Yes.\ndef f():\n    return BIG\n`;
    const reply = answerFromReference(long, 'What is big? And what does f return?');
    expectShort(reply, 400);
    expect(reply).not.toBe(DONT_KNOW);
  });

  // Reported as skipped (not as passed) on a fresh clone without the samples (test/helpers/colbench-sample.ts).
  it.skipIf(!haveBackendSample())(
    'handles every ColBench sample reference: short replies, nothing made up, numbers found',
    () => {
      let asked = 0;
      let found = 0;
      for (const ref of sampleReferences()) {
        for (const q of [
          'What exactly should the inputs look like?',
          'Are there any thresholds or special cases?',
          'How should the result be rounded?',
          'What if the list is empty?',
        ]) {
          expectShort(answerFromReference(ref, q), 400);
        }
        expect(answerFromReference(ref, NONSENSE)).toBe(DONT_KNOW);
        // A number a variable is compared with is what a person would point at when asked about that variable.
        const m = /\b([a-z_][a-z0-9_]*)\s*(?:>=|<=|>|<|==)\s*(-?\d+(?:\.\d+)?)\b/.exec(ref);
        if (m) {
          asked++;
          if (answerFromReference(ref, `What about the ${m[1]!.replace(/_/g, ' ')}, is there a limit?`).includes(m[2]!))
            found++;
        }
      }
      expect(asked).toBeGreaterThan(10);
      expect(found / asked).toBeGreaterThanOrEqual(0.75);
      console.log(`[simulator] ColBench sample: compared-with number found for ${found}/${asked} variables`);
    },
  );

  it('works on the built-in tasks too', () => {
    const fine = builtinTasks({ kind: 'backend' }).find((t) => t.externalId === 'overdue-book-fine') as BackendTask;
    expect(answerFromReference(fine.reference, 'Is there a grace period before the fine starts?')).toMatch(
      /grace days is 2/,
    );
    expect(answerFromReference(fine.reference, 'Is there a maximum fine?')).toMatch(/10\.0/);
  });
});

describe('rule-based simulator, frontend', () => {
  const page = builtinTasks({ kind: 'frontend' }).find((t) => t.externalId === 'sourdough-bakery') as FrontendTask;

  it('answers from the reference page text: heading, colours, layout, images', () => {
    expect(answerFromHtml(page.reference, 'What should the main heading say?')).toContain('Crumb & Crust');
    expect(answerFromHtml(page.reference, 'What are the section headings?')).toContain(
      'Slow bread, baked every morning',
    );
    expect(answerFromHtml(page.reference, 'What colours should the page use?')).toMatch(/yellow/);
    expect(answerFromHtml(page.reference, 'How is the layout organised?')).toMatch(/header/);
    expect(answerFromHtml(page.reference, 'Are there any pictures?')).toMatch(/picture/);
    expect(answerFromHtml(page.reference, NONSENSE)).toBe(DONT_KNOW);
  });

  it('describes a draft through the plug-in, capped at two sentences and 1,000 characters', async () => {
    const seen: string[] = [];
    const sim = createRuleSimulator(page, {
      describeVisualDifference: async ({ referenceHtml, draftHtml }) => {
        seen.push(draftHtml);
        expect(referenceHtml).toBe(page.reference);
        return `The header should be dark brown. ${'Everything else is too pale. '.repeat(60)}`;
      },
    });
    const draft = '<!DOCTYPE html><html><body><h1>Bread</h1></body></html>';
    const reply = await sim.reply(dialogueWith(page.description, `Here is a first try. OUTPUT: ${draft}`));
    expect(seen).toEqual([draft]);
    expectShort(reply, 1000);
    expect(reply.startsWith('The header should be dark brown.')).toBe(true);
  });

  it('compares a draft by its text when no screenshot comparison is plugged in', async () => {
    const reply = await createRuleSimulator(page).reply(
      dialogueWith(
        page.description,
        'OUTPUT: <!DOCTYPE html><html><body class="bg-white"><h1>Bread</h1></body></html>',
      ),
    );
    expectShort(reply, 1000);
    expect(reply).toContain('Crumb & Crust');
  });
});
