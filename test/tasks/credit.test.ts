// The credit family's rules (bench/credit/README.md): the optimum is reachable and scores success, a repeated
// question gains nothing, the collaborator answers only from the hidden information and at most K questions.
import { describe, expect, it } from 'vitest';
import {
  CREDIT_K,
  CREDIT_KEYS,
  DONT_KNOW_CREDIT,
  NO_MORE,
  CREDIT_V2_KEYS,
  classifyMoves,
  createCreditCollaborator,
  creditReply,
  creditSplit,
  creditValuesSplit,
  createCreditScorer,
  generateCreditTasks,
  parseCreditReference,
  scoreCreditAnswer,
  scoreCreditGame,
  CREDIT_IDLE_COST,
  CREDIT_V5_ANSWER,
} from '../../tasks/credit.ts';
import { trueMoveValue } from '../../tasks/credit-values.ts';
import {
  CREDIT_STATES,
  checkMixture,
  createCreditDemonstrator,
  demonstratorMix,
  demonstratorSuccess,
  formatMixCheck,
} from '../../tasks/credit-demonstrator.ts';
import { playEpisode } from '../../tasks/protocol.ts';
import { spearman } from '../../tasks/stats.ts';

const tasks = generateCreditTasks({ seed: 3, count: 40, split: 'train' });
/** True move values are computed by dynamic programming (credit.ts stateValue), so compared to 12 decimals. */
const expectValues = (actual: number[], expected: number[]) => {
  expect(actual).toHaveLength(expected.length);
  actual.forEach((x, i) => expect(x).toBeCloseTo(expected[i]!, 12));
};
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
      const ep = await playEpisode({
        task,
        agent: createCreditDemonstrator({ seed: 1, optimal: true }),
        collaborator: createCreditCollaborator(task),
      });
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
    expect(
      creditReply(t, [`What is the ${k1}?`, `What is the ${k1}?`, `What is the ${k2}?`], `What is the ${t.keys[2]}?`),
    ).toMatchObject({ move: 'useless', reply: NO_MORE });
    const moves = classifyMoves(tasks[0]!.reference, turns);
    expect(moves.map((m) => m.move)).toEqual(['useful', 'repeated', 'useful']);
    expect(trueMoveValue(moves[1]!)).toBeCloseTo(-1 / CREDIT_K);
  });

  it('the collaborator answers only from the hidden information', async () => {
    const task = tasks[1]!;
    const t = parseCreditReference(task.reference);
    const c = createCreditCollaborator(task);
    const base = [
      { role: 'system' as const, content: 'x' },
      { role: 'user' as const, content: task.description },
    ];
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

  it("checkMixture: the demonstrator's own games show its table's shares and full copying; a non-copying player shows none", async () => {
    const many = generateCreditTasks({ seed: 5, count: 2000, split: 'train' });
    const demo = createCreditDemonstrator({ seed: 11 });
    const games = [];
    for (const task of many)
      games.push({
        reference: task.reference,
        turns: (await playEpisode({ task, agent: demo, collaborator: createCreditCollaborator(task) })).turns,
      });
    const c = checkMixture(games);
    expect(c.games).toBe(2000);
    expect(c.copied).toBe(c.told);
    expect(c.told).toBeGreaterThan(0);
    expect(c.answersWithWrongKeys).toBe(0);
    expect(c.answers).toBe(2000);
    // The first message and the state after a new value are exactly the table's rows.
    for (const s of ['first', 'after new value'] as const) {
      for (const m of ['useful', 'repeated', 'useless', 'answer'] as const)
        expect(Math.abs(c.states[s].share[m] - c.designed[s][m])).toBeLessThan(0.04);
    }
    expect(c.designed.first).toEqual(demonstratorMix({ first: true, before: 0, asked: 0, lastGaveNew: false }));
    expect(c.states['all given or budget spent'].share.answer).toBeGreaterThan(0.85);
    expect(c.success / c.games).toBeCloseTo(demonstratorSuccess(), 1);
    const lines = formatMixCheck('demonstrator', c);
    expect(lines).toHaveLength(CREDIT_STATES.length + 2);

    // Asks pool keys outside the list and answers with zeros: no value copied, every answer's keys wrong.
    const task = many[0]!;
    const t = parseCreditReference(task.reference);
    const outside = CREDIT_KEYS.find((k) => !t.keys.includes(k))!;
    const inside = t.keys[0]!;
    const turns = [
      { role: 'agent', content: `What is the ${inside}?` },
      { role: 'human', content: `The ${inside} is ${t.values[0]}.` },
      { role: 'agent', content: `What is the ${outside}?` },
      { role: 'human', content: DONT_KNOW_CREDIT },
      {
        role: 'agent',
        content: `I WANT TO ANSWER:\ndef settings():\n    return {"${outside}": 0, "${t.keys[1]}": 0, "${t.keys[2]}": 0}`,
      },
    ];
    const bad = checkMixture([{ reference: task.reference, turns }]);
    expect(bad).toMatchObject({ told: 1, copied: 0, answersWithWrongKeys: 1, answers: 1, success: 0 });
    expect(bad.states.first.share.useful).toBe(1);
    expect(bad.states['after new value'].share.useless).toBe(1);
    expect(bad.states.otherwise.share.answer).toBe(1);
  });

  it('spearman handles ties and order', () => {
    expect(spearman([1, 2, 3, 4], [10, 20, 30, 40]).rho).toBeCloseTo(1);
    expect(spearman([1, 2, 3, 4], [4, 3, 2, 1]).rho).toBeCloseTo(-1);
    expect(spearman([1, 1, 2, 2, 3], [0, 0, 1, 1, 1]).rho).toBeGreaterThan(0.8);
  });
});

describe('credit tasks, design v2 (bench/credit/README.md): one key set, the values obtained scored', () => {
  const v2 = generateCreditTasks({ seed: 3, count: 60, split: 'train', design: 'v2' });
  const v2held = generateCreditTasks({ seed: 3, count: 60, split: 'test', design: 'v2' });

  it("every task needs the pool's first K keys; held-out value triples never occur in training", () => {
    const trainValues = new Set(v2.map((t) => (t.meta!.values as number[]).join(',')));
    for (const t of [...v2, ...v2held]) expect(parseCreditReference(t.reference).keys).toEqual([...CREDIT_V2_KEYS]);
    for (const t of v2held) {
      expect(creditValuesSplit(t.meta!.values as number[])).toBe('test');
      expect(trainValues.has((t.meta!.values as number[]).join(','))).toBe(false);
    }
    expect(new Set(v2.map((t) => t.externalId)).size).toBe(v2.length);
    expect(v2[0]!.externalId).not.toBe(tasks[0]!.externalId);
  });

  it('v5 takes 0.05 off for each question asked once nothing more can be obtained, and values those moves so', () => {
    const task = v2[0]!;
    const t = parseCreditReference(task.reference);
    const ask = (k: string) => [
      { role: 'agent', content: `What is the ${k}?` },
      { role: 'human', content: t.keys.includes(k) ? `The ${k} is ${t.values[t.keys.indexOf(k)]}.` : "I don't know." },
    ];
    const answer = { role: 'agent', content: CREDIT_V5_ANSWER };
    const [a, b, c] = t.keys as [string, string, string];
    // UUURRA: two questions after every value was told.
    const done = [...ask(a), ...ask(b), ...ask(c), ...ask(a), ...ask(b), answer];
    expect(scoreCreditGame(task.reference, done, 'v5')).toEqual({
      score: 1 - 2 * CREDIT_IDLE_COST,
      success: true,
      right: 3,
    });
    expect(scoreCreditGame(task.reference, done, 'v4')).toEqual({ score: 1, success: true, right: 3 });
    const moves = classifyMoves(task.reference, done);
    expectValues(
      moves.map((m) => trueMoveValue(m, CREDIT_K, 'v5')),
      [0, 0, 0, -CREDIT_IDLE_COST, -CREDIT_IDLE_COST, 0],
    );
    expectValues(
      moves.map((m) => trueMoveValue(m, CREDIT_K, 'v4')),
      [0, 0, 0, 0, 0, 0],
    );
    // UURXXA: past the budget nothing is obtainable, so the answer there is worth 0 (it was once valued +2/3).
    const over = classifyMoves(task.reference, [...ask(a), ...ask(b), ...ask(a), ...ask(c), ...ask(c), answer]);
    expectValues(
      over.map((m) => trueMoveValue(m, CREDIT_K, 'v4')),
      [0, 0, -1 / 3, 0, 0, 0],
    );
    expectValues(
      over.map((m) => trueMoveValue(m, CREDIT_K, 'v5')),
      [0, 0, -1 / 3, -CREDIT_IDLE_COST, -CREDIT_IDLE_COST, 0],
    );
    // XXX then two idle questions: no value was told, so the score stays at its floor and idling costs nothing.
    const none = [...ask('width'), ...ask('width'), ...ask('width'), ...ask('width'), ...ask(a), answer];
    expect(scoreCreditGame(task.reference, none, 'v5').score).toBe(0);
    expectValues(
      classifyMoves(task.reference, none).map((m) => trueMoveValue(m, CREDIT_K, 'v5')),
      [-1 / 3, -1 / 3, -1 / 3, 0, 0, 0],
    );
  });

  it('scores the values the collaborator gave before the answer, whatever the answer writes', async () => {
    const task = v2[0]!;
    const [k1, k2] = CREDIT_V2_KEYS;
    const t = parseCreditReference(task.reference);
    const zeros = 'I WANT TO ANSWER:\ndef settings():\n    return {"speed": 0, "size": 0, "depth": 0}';
    const turns = [
      { role: 'agent', content: `What is the ${k1}?` },
      { role: 'human', content: `The ${k1} is ${t.values[0]}.` },
      { role: 'agent', content: `What is the ${k1}?` },
      { role: 'human', content: `The ${k1} is ${t.values[0]}.` },
      { role: 'agent', content: `What is the ${k2}?` },
      { role: 'human', content: `The ${k2} is ${t.values[1]}.` },
      { role: 'agent', content: zeros },
    ];
    expect(scoreCreditGame(task.reference, turns)).toEqual({ score: 2 / 3, success: false, right: 2 });
    const scorer = createCreditScorer({ design: 'v2' });
    const content = {
      kind: 'backend' as const,
      description: task.description,
      reference: task.reference,
      testCases: [],
    };
    expect(await scorer.evaluate(content, zeros, turns)).toMatchObject({
      score: 2 / 3,
      success: false,
      testsPassed: 2,
      testsTotal: 3,
      evaluatorVersion: 'credit-1-v2',
    });
    // Without the game, v2's score cannot be computed: a clear error, not a silent 0.
    await expect(scorer.evaluate(content, zeros)).rejects.toThrow(/needs the dialogue/);
    // v1's scorer reads the answer's dict: all zeros score nothing.
    expect((await createCreditScorer().evaluate(content, zeros, turns)).score).toBe(0);
    // The optimum: three useful questions then an answer, full score.
    const ep = await playEpisode({
      task,
      agent: createCreditDemonstrator({ seed: 1, optimal: true }),
      collaborator: createCreditCollaborator(task),
    });
    expect(scoreCreditGame(task.reference, ep.turns)).toMatchObject({ score: 1, success: true });
  });

  it("the demonstrator scores the same under v1's and v2's rules (it copies what it was told), so its exact success holds", async () => {
    const demo = createCreditDemonstrator({ seed: 13 });
    const games = [];
    for (const task of generateCreditTasks({ seed: 6, count: 400, split: 'train', design: 'v2' })) {
      const ep = await playEpisode({ task, agent: demo, collaborator: createCreditCollaborator(task) });
      expect(scoreCreditGame(task.reference, ep.turns)).toEqual(scoreCreditAnswer(task.reference, ep.answer));
      games.push({ reference: task.reference, turns: ep.turns });
    }
    const c = checkMixture(games, 'v2');
    expect(c.copied).toBe(c.told);
    expect(c.success).toBe(checkMixture(games, 'v1').success);
  });
});
