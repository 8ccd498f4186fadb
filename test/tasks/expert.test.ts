import { describe, expect, it } from 'vitest';
import type { Collaborator } from '../../tasks/agent.ts';
import { createExpertAgent, createNonAskingAgent, readFact } from '../../tasks/expert.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { miniMeta } from '../../tasks/mini-model.ts';
import { miniTemplate } from '../../tasks/mini-templates.ts';
import type { BackendTask, TaskRecord } from '../../tasks/model.ts';
import { ANSWER_MARKER, playEpisode, type Episode } from '../../tasks/protocol.ts';
import { createRuleSimulator } from '../../tasks/simulator.ts';
import { evaluateBackendBatch } from '../../tasks/backend-eval.ts';
import type { Agent } from '../../tasks/agent.ts';

type MiniTask = TaskRecord & BackendTask;
const tasks = generateMiniTasks({ seed: 2026, count: 36 }) as MiniTask[];

async function play(
  agent: Agent,
  ts: MiniTask[],
  collaborator?: (t: MiniTask) => Collaborator,
): Promise<{ episodes: Episode[]; scores: number[] }> {
  const episodes: Episode[] = [];
  for (const task of ts)
    episodes.push(
      await playEpisode({ task, agent, collaborator: collaborator ? collaborator(task) : createRuleSimulator(task) }),
    );
  const results = await evaluateBackendBatch(ts.map((task, i) => ({ task, answer: episodes[i]!.answer })));
  return { episodes, scores: results.map((r) => r.score) };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('scripted expert on ColBench-mini', () => {
  it('asks about every withheld fact and scores 1.0 on every task; a non-asking agent scores clearly lower', async () => {
    const expert = await play(createExpertAgent({ tasks }), tasks);
    expect(expert.scores.every((s) => s === 1)).toBe(true);
    expert.episodes.forEach((ep, i) => {
      expect(ep.endReason).toBe('answered');
      const questions = ep.turns
        .filter((t) => t.role === 'agent' && t.parsed?.type === 'question')
        .map((t) => t.content)
        .join('\n');
      // Tasks can share a description (same request, different hidden values), so any phrasing of the
      // template's question counts.
      for (const f of miniTemplate(miniMeta(tasks[i]!)!.template).facts)
        expect(
          f.questions.some((q) => questions.includes(q)),
          f.key,
        ).toBe(true);
      // Two questions a turn: at most three question turns plus the answer.
      expect(ep.turns.filter((t) => t.role === 'agent').length).toBeLessThanOrEqual(4);
    });

    const guesser = await play(createNonAskingAgent({ tasks }), tasks);
    expect(guesser.episodes.every((ep) => ep.turns.length === 1)).toBe(true);
    expect(guesser.scores.every((s) => s < 1)).toBe(true);
    expect(mean(guesser.scores)).toBeLessThan(0.4);
    console.log(
      `[mini] expert ${mean(expert.scores).toFixed(3)}, non-asking ${mean(guesser.scores).toFixed(3)} over ${tasks.length} tasks`,
    );
  });

  it('builds its answer from what the collaborator said, not from the task metadata', async () => {
    // Metadata without the answers: the expert must still succeed.
    const blind = tasks.slice(0, 12).map((t) => ({
      ...t,
      meta: { ...t.meta, withheld: miniMeta(t)!.withheld.map((w) => ({ ...w, answer: '' })) },
    })) as MiniTask[];
    const seeing = await play(createExpertAgent({ tasks: blind }), blind);
    expect(seeing.scores.every((s) => s === 1)).toBe(true);

    // A collaborator answering from another task's code of the same template: the expert follows it.
    const task = tasks.find((t) => miniMeta(t)!.template === 'bulk-discount')!;
    const other = generateMiniTasks({ seed: 1, count: 200, templates: ['bulk-discount'] }).find(
      (t) => t.kind === 'backend' && miniMeta(t)!.withheld[0]!.answer !== miniMeta(task)!.withheld[0]!.answer,
    ) as MiniTask;
    const misled = await playEpisode({
      task,
      agent: createExpertAgent({ tasks: [task] }),
      collaborator: createRuleSimulator(other),
    });
    for (const w of miniMeta(other)!.withheld) expect(misled.answer).toContain(`${w.key} = ${w.answer}`);

    // A collaborator that knows nothing: every value falls back to the guess.
    const clueless: Collaborator = { name: 'clueless', reply: async () => "I don't know." };
    const ep = await playEpisode({ task, agent: createExpertAgent({ tasks: [task] }), collaborator: clueless });
    const guessed = await playEpisode({ task, agent: createNonAskingAgent({ tasks: [task] }), collaborator: clueless });
    expect(ep.answer).toBe(guessed.answer);
  });

  it('makes demonstrations of varying quality when noisy, reproducibly for a seed', async () => {
    const sub = tasks.slice(0, 18);
    const noisy = await play(createExpertAgent({ tasks: sub, noise: 0.3, seed: 4 }), sub);
    const again = await play(createExpertAgent({ tasks: sub, noise: 0.3, seed: 4 }), sub);
    expect(again.episodes.map((e) => e.answer)).toEqual(noisy.episodes.map((e) => e.answer));
    expect(mean(noisy.scores)).toBeLessThan(1);
    expect(mean(noisy.scores)).toBeGreaterThan(0);
    expect(new Set(noisy.scores).size).toBeGreaterThanOrEqual(3);
    // Replaying the same tasks with the same agent gives different games, so training pairs can differ in reward.
    const agent = createExpertAgent({ tasks: sub, noise: 0.3, seed: 8 });
    const first = await play(agent, sub);
    const second = await play(agent, sub);
    expect(second.episodes.map((e) => e.answer)).not.toEqual(first.episodes.map((e) => e.answer));
    console.log(`[mini] noisy expert (0.3) mean ${mean(noisy.scores).toFixed(3)}`);
  });

  it('refuses tasks it does not know and bad noise values', async () => {
    expect(() => createExpertAgent({ tasks, noise: 2 })).toThrow(/noise/);
    expect(() => createExpertAgent({ tasks: [] })).toThrow(/ColBench-mini/);
    const agent = createExpertAgent({ tasks });
    await expect(
      agent.reply([
        { role: 'system', content: 'x' },
        { role: 'user', content: 'Write something else.' },
      ]),
    ).rejects.toThrow(/not one of its/);
  });

  it('ends with the protocol marker', async () => {
    const reply = await createNonAskingAgent({ tasks }).reply([{ role: 'user', content: tasks[0]!.description }]);
    expect(reply.text.startsWith(ANSWER_MARKER)).toBe(true);
  });
});

describe('reading a fact from a reply', () => {
  const template = miniTemplate('distance-units');
  const spec = (key: string) => template.facts.find((f) => f.key === key)!;

  it('reads numbers, strings, booleans and choices, in the sentence about the fact', () => {
    expect(readFact(spec('DECIMALS'), 'The decimals is 3 (number of decimal places kept in the result).')).toBe(3);
    expect(
      readFact(
        spec('OUTPUT_UNIT'),
        "The input unit is 'feet' (unit of the distance passed in). The output unit is 'yards' (unit of the result).",
      ),
    ).toBe('yards');
    expect(readFact(spec('INPUT_UNIT'), "The input unit is 'feet'. The output unit is 'yards'.")).toBe('feet');
    expect(readFact(spec('INPUT_UNIT'), 'They come in km from my watch.')).toBe('kilometers');
    const tags = miniTemplate('tag-line');
    expect(
      readFact(
        tags.facts.find((f) => f.key === 'SEPARATOR')!,
        "The separator is ' | ' (text placed between two tags).",
      ),
    ).toBe(' | ');
    expect(readFact(tags.facts.find((f) => f.key === 'LOWERCASE')!, 'No, keep them as they are.')).toBe(false);
    expect(
      readFact(
        tags.facts.find((f) => f.key === 'LOWERCASE')!,
        'The lowercase is True (whether tags are turned into lower case).',
      ),
    ).toBe(true);
  });

  it('says nothing when the reply does not tell', () => {
    expect(readFact(spec('DECIMALS'), "I don't know.")).toBeUndefined();
    expect(readFact(spec('INPUT_UNIT'), 'Whatever you think is best.')).toBeUndefined();
  });
});
