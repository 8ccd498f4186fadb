// The credit family's true move values (tasks/credit-values.ts) and design v7's budget drawn per game
// (bench/credit/README.md, "Design v7"): one dynamic programme gives the closed forms of v2-v6, and under v7 a
// wasted question costs what it may lose, a game with one can still succeed, and the demonstrator's exact success
// is what its games show.
import { describe, expect, it } from 'vitest';
import {
  classifyMoves,
  createCreditCollaborator,
  creditBudgets,
  creditDescription,
  creditGameBudget,
  CREDIT_IDLE_COST,
  CREDIT_K,
  CREDIT_V5_ANSWER,
  generateCreditTasks,
  NO_MORE,
  parseCreditReference,
  scoreCreditGame,
  type CreditDesign,
  type MoveRecord,
} from '../../tasks/credit.ts';
import { createCreditDemonstrator, demonstratorSuccess } from '../../tasks/credit-demonstrator.ts';
import { moveOf } from '../../tasks/credit-states.ts';
import { knownDone, trueMoveValue } from '../../tasks/credit-values.ts';
import { playEpisode } from '../../tasks/protocol.ts';

const task = generateCreditTasks({ seed: 5, count: 1, split: 'train', design: 'v7' })[0]!;
const t = parseCreditReference(task.reference);
const [a, b, c] = t.keys as [string, string, string];
const ask = (k: string, reply?: string) => [
  { role: 'agent', content: `What is the ${k}?` },
  { role: 'human', content: reply ?? `The ${k} is ${t.values[t.keys.indexOf(k)]}.` },
];
const answer = { role: 'agent', content: CREDIT_V5_ANSWER };
const state = (before: number, asked: number, move: MoveRecord['move'], seeks = move === 'useful'): MoveRecord => ({
  move,
  before,
  asked,
  refused: false,
  spent: false,
  seeks,
});

describe('true move values', () => {
  it('before v7 the dynamic programme gives the closed forms: 0, -1/K while the budget has room, idle, -(obtainable)/K', () => {
    // The closed form the family used through v6 (K known, K questions answered).
    const closed = (m: MoveRecord, design: CreditDesign) => {
      const obtainable = Math.max(0, Math.min(CREDIT_K - m.before, CREDIT_K - m.asked));
      if (m.move === 'answer') return -obtainable / CREDIT_K;
      if (m.move === 'useful') return 0;
      if (obtainable > 0) return -1 / CREDIT_K;
      return ['v5', 'v6'].includes(design) && m.before > 0 ? -CREDIT_IDLE_COST : 0;
    };
    for (const design of ['v2', 'v4', 'v5', 'v6'] as const)
      for (let asked = 0; asked <= 8; asked++)
        for (let before = 0; before <= Math.min(asked, CREDIT_K); before++)
          for (const move of ['useful', 'repeated', 'useless', 'answer'] as const) {
            if (move === 'useful' && (before >= CREDIT_K || asked >= CREDIT_K)) continue;
            const m = { ...state(before, asked, move), spent: asked > CREDIT_K };
            expect(trueMoveValue(m, CREDIT_K, design)).toBeCloseTo(closed(m, design), 12);
          }
  });

  it('v7: a wasted question costs the value it loses when the budget is K, and the idle question that finds out', () => {
    // After one value, one question asked: the budget is 3, 4 or 5. A waste loses the last value (1/K) and a
    // refused question (the idle cost) only when it is 3.
    expect(trueMoveValue(state(1, 1, 'repeated'), CREDIT_K, 'v7')).toBeCloseTo(
      -(1 / 3) * (1 / CREDIT_K + CREDIT_IDLE_COST),
      12,
    );
    expect(trueMoveValue(state(1, 1, 'useful'), CREDIT_K, 'v7')).toBe(0);
    expect(trueMoveValue(state(0, 0, 'answer'), CREDIT_K, 'v7')).toBeCloseTo(-1, 12);
    expect(trueMoveValue(state(1, 1, 'answer'), CREDIT_K, 'v7')).toBeCloseTo(-2 / 3, 12);
    // Two values after three questions: asking again is answered with chance 2/3 (budget 4 or 5).
    expect(trueMoveValue(state(2, 3, 'answer'), CREDIT_K, 'v7')).toBeCloseTo(
      -((2 / 3) * (1 / 3) - (1 / 3) * CREDIT_IDLE_COST),
      12,
    );
    // A refusal seen: the budget is spent, so any question is idle and the answer costs nothing.
    const spent = { ...state(2, 4, 'useless'), spent: true };
    expect(knownDone(spent, CREDIT_K, 'v7')).toBe(true);
    expect(trueMoveValue(spent, CREDIT_K, 'v7')).toBe(-CREDIT_IDLE_COST);
    expect(trueMoveValue({ ...spent, move: 'answer' }, CREDIT_K, 'v7')).toBe(0);
    // Five questions asked: no budget is larger, so the next one is idle even before the refusal.
    expect(knownDone(state(2, 5, 'useless'), CREDIT_K, 'v7')).toBe(true);
    expect(knownDone(state(2, 4, 'useless'), CREDIT_K, 'v7')).toBe(false);
    expect(knownDone(state(2, 3, 'useless'), CREDIT_K, 'v6')).toBe(true);
  });
});

describe('design v7: a budget from K to K + 2 drawn per game and told to no one', () => {
  it('draws each budget about equally often, the same for game i every time, and names the range', () => {
    expect(creditBudgets('v6')).toEqual([3]);
    expect(creditBudgets('v7')).toEqual([3, 4, 5]);
    const n = new Map<number, number>();
    for (let i = 0; i < 3000; i++) {
      const budget = creditGameBudget(task.reference, i, 'v7');
      expect(creditGameBudget(task.reference, i, 'v7')).toBe(budget);
      expect(creditGameBudget(task.reference, i, 'v6')).toBe(3);
      n.set(budget, (n.get(budget) ?? 0) + 1);
    }
    expect([...n.keys()].sort()).toEqual([3, 4, 5]);
    for (const count of n.values()) expect(Math.abs(count - 1000)).toBeLessThan(4 * Math.sqrt(3000 * (2 / 9)));
    expect(task.description).toBe(creditDescription(t.keys, 'v7'));
    expect(task.description).toContain('I can answer between 3 and 5 questions.');
    expect(creditDescription(t.keys, 'v6')).toContain('I can answer 3 questions.');
  });

  it('a game with a wasted question succeeds when the budget has room, and the scorer reads the budget from the game', async () => {
    const lucky = [...ask(a), ...ask(a), ...ask(b), ...ask(c), answer];
    expect(scoreCreditGame(task.reference, lucky, 'v7')).toEqual({ score: 1, success: true, right: 3 });
    expect(classifyMoves(task.reference, lucky, 'v7').map((m) => m.move)).toEqual([
      'useful',
      'repeated',
      'useful',
      'useful',
      'answer',
    ]);
    // The same moves against a budget of 3: the last question is refused, an idle question.
    const unlucky = [...ask(a), ...ask(a), ...ask(b), ...ask(c, NO_MORE), answer];
    expect(scoreCreditGame(task.reference, unlucky, 'v7')).toEqual({
      score: 2 / 3 - CREDIT_IDLE_COST,
      success: false,
      right: 2,
    });
    const moves = classifyMoves(task.reference, unlucky, 'v7');
    expect(moves[3]).toMatchObject({ move: 'useless', refused: true, seeks: true, spent: false });
    expect(moves[4]).toMatchObject({ move: 'answer', spent: true });
    // The collaborator of such a game: 4 questions answered, the 5th refused.
    const collaborator = createCreditCollaborator(task, 4);
    const dialogue = (qs: string[]) => [
      { role: 'system' as const, content: 's' },
      { role: 'user' as const, content: task.description },
      ...qs.flatMap((q, i) => [
        { role: 'assistant' as const, content: `What is the ${q}?` },
        ...(i < qs.length - 1 ? [{ role: 'user' as const, content: 'r' }] : []),
      ]),
    ];
    expect(await collaborator.reply(dialogue([a, a, b, c]))).toBe(`The ${c} is ${t.values[2]}.`);
    expect(await collaborator.reply(dialogue([a, a, b, c, a]))).toBe(NO_MORE);
    // A candidate after four answered questions: answered if the budget is 5, so classified as asked.
    const four = [...ask(a), ...ask(a), ...ask('width', "I don't know."), ...ask(b)];
    expect(moveOf(task.reference, four, `What is the ${c}?`, 'v7')).toMatchObject({ move: 'useful', asked: 4 });
    expect(moveOf(task.reference, four, `What is the ${c}?`, 'v6')).toMatchObject({ move: 'useless', refused: true });
  });

  it("the demonstrator's exact success, in expectation over the budgets, is what its games show", async () => {
    const p = demonstratorSuccess(CREDIT_K, 'v7');
    expect(p).toBeGreaterThan(demonstratorSuccess(CREDIT_K, 'v6'));
    const demo = createCreditDemonstrator({ seed: 21, design: 'v7' });
    let wins = 0;
    let withWaste = 0;
    const many = generateCreditTasks({ seed: 8, count: 2000, split: 'train', design: 'v7' });
    for (const [i, task] of many.entries()) {
      const budget = creditGameBudget(task.reference, i, 'v7');
      const ep = await playEpisode({ task, agent: demo, collaborator: createCreditCollaborator(task, budget) });
      const r = scoreCreditGame(task.reference, ep.turns, 'v7');
      if (!r.success) continue;
      wins++;
      if (classifyMoves(task.reference, ep.turns, 'v7').some((m) => m.move !== 'useful' && m.move !== 'answer'))
        withWaste++;
    }
    expect(Math.abs(wins / many.length - p)).toBeLessThan(4 * Math.sqrt((p * (1 - p)) / many.length));
    // The point of v7: successful games that hold a mistake, for a method imitating success to copy.
    expect(withWaste / wins).toBeGreaterThan(0.2);
  });
});
