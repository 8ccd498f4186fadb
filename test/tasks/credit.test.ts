// The credit family's rules (bench/credit/README.md): the optimum is reachable and scores success, a repeated
// question gains nothing, the collaborator answers only from the hidden information and at most K questions.
import { describe, expect, it } from 'vitest';
import {
  CREDIT_K,
  CREDIT_KEYS,
  DONT_KNOW_CREDIT,
  NO_MORE,
  classifyMoves,
  createCreditCollaborator,
  createCreditDemonstrator,
  creditReply,
  creditSplit,
  demonstratorSuccess,
  generateCreditTasks,
  parseCreditReference,
  scoreCreditAnswer,
  trueMoveValue,
} from '../../tasks/credit.ts';
import { playEpisode } from '../../tasks/protocol.ts';
import { spearman } from '../../tasks/stats.ts';

const tasks = generateCreditTasks({ seed: 3, count: 40, split: 'train' });
const held = generateCreditTasks({ seed: 3, count: 40, split: 'test' });

describe('credit tasks', () => {
  it('are backend tasks whose held-out key sets never occur in training', () => {
    const trainSets = new Set(tasks.map((t) => [...(t.meta!.keys as string[])].sort().join(',')));
    for (const t of held) {
      expect(t.kind).toBe('backend');
      expect(creditSplit(t.meta!.keys as string[])).toBe('test');
      expect(trainSets.has([...(t.meta!.keys as string[])].sort().join(','))).toBe(false);
    }
    expect(parseCreditReference(tasks[0]!.reference).keys).toHaveLength(CREDIT_K);
  });

  it('the optimum is reachable: ask each needed key once, answer, 4 messages, full score and success', async () => {
    for (const task of tasks.slice(0, 20)) {
      const ep = await playEpisode({ task, agent: createCreditDemonstrator({ seed: 1, optimal: true }), collaborator: createCreditCollaborator(task) });
      expect(ep.turns.filter((t) => t.role === 'agent')).toHaveLength(CREDIT_K + 1);
      expect(scoreCreditAnswer(task.reference, ep.answer)).toMatchObject({ score: 1, success: true });
      const moves = classifyMoves(task.reference, ep.turns);
      expect(moves.map((m) => m.move)).toEqual(['useful', 'useful', 'useful', 'answer']);
      expect(moves.map((m) => trueMoveValue(m))).toEqual([0, 0, 0, 0]);
    }
  });

  it('a repeated question gains nothing and costs a value under the budget', () => {
    const t = parseCreditReference(tasks[0]!.reference);
    const [k1, k2] = t.keys;
    const first = creditReply(t, [], `What is the ${k1}?`);
    expect(first.move).toBe('useful');
    const again = creditReply(t, [`What is the ${k1}?`], `What is the ${k1}?`);
    expect(again).toMatchObject({ move: 'repeated', reply: first.reply });
    const turns = [`What is the ${k1}?`, `What is the ${k1}?`, `What is the ${k2}?`].flatMap((q, i, qs) => [
      { role: 'agent', content: q },
      { role: 'human', content: creditReply(t, qs.slice(0, i), q).reply },
    ]);
    // The budget is spent: the third key can no longer be had.
    expect(creditReply(t, [`What is the ${k1}?`, `What is the ${k1}?`, `What is the ${k2}?`], `What is the ${t.keys[2]}?`)).toMatchObject({ move: 'useless', reply: NO_MORE });
    const moves = classifyMoves(tasks[0]!.reference, turns);
    expect(moves.map((m) => m.move)).toEqual(['useful', 'repeated', 'useful']);
    expect(trueMoveValue(moves[1]!)).toBeCloseTo(-1 / CREDIT_K);
  });

  it('the collaborator answers only from the hidden information', async () => {
    const task = tasks[1]!;
    const t = parseCreditReference(task.reference);
    const c = createCreditCollaborator(task);
    const base = [{ role: 'system' as const, content: 'x' }, { role: 'user' as const, content: task.description }];
    for (const k of CREDIT_KEYS) {
      const reply = await c.reply([...base, { role: 'assistant', content: `What is the ${k}?` }]);
      if (t.keys.includes(k)) expect(reply).toBe(`The ${k} is ${t.values[t.keys.indexOf(k)]}.`);
      else expect(reply).toBe(DONT_KNOW_CREDIT);
    }
    expect(await c.reply([...base, { role: 'assistant', content: 'What colour is it?' }])).toBe(DONT_KNOW_CREDIT);
  });

  it("the demonstrator's empirical success matches the exact figure", async () => {
    const many = generateCreditTasks({ seed: 4, count: 3000, split: 'train' });
    const demo = createCreditDemonstrator({ seed: 9 });
    let wins = 0;
    for (const task of many) {
      const ep = await playEpisode({ task, agent: demo, collaborator: createCreditCollaborator(task) });
      if (scoreCreditAnswer(task.reference, ep.answer).success) wins++;
    }
    const p = demonstratorSuccess();
    expect(p).toBeCloseTo(0.6 * 0.35 * 0.35, 10);
    expect(Math.abs(wins / many.length - p)).toBeLessThan(4 * Math.sqrt((p * (1 - p)) / many.length));
  });

  it('spearman handles ties and order', () => {
    expect(spearman([1, 2, 3, 4], [10, 20, 30, 40]).rho).toBeCloseTo(1);
    expect(spearman([1, 2, 3, 4], [4, 3, 2, 1]).rho).toBeCloseTo(-1);
    expect(spearman([1, 1, 2, 2, 3], [0, 0, 1, 1, 1]).rho).toBeGreaterThan(0.8);
  });
});
