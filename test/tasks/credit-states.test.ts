// Reading the credit family state by state (tasks/credit-states.ts) and designs v3's to v6's demonstrators: every variant
// of a canonical state is what its name says, every key is useful in some variants and repeated in others, a
// game's path is its moves as letters, the greedy table never merges policies whose games differ, and an actor's
// pairs are read by the state they were sampled in.
import { describe, expect, it } from 'vitest';
import {
  CANONICAL_STATES,
  canonicalMoves,
  canonicalStates,
  formatGreedyTable,
  greedySummary,
  movePath,
  readPairs,
  sameGreedyGames,
  type PlayedGame,
} from '../../tasks/credit-states.ts';
import {
  classifyMoves,
  createCreditCollaborator,
  CREDIT_K,
  CREDIT_V2_KEYS,
  CREDIT_V5_ANSWER,
  creditReply,
  generateCreditTasks,
  keysIn,
  parseCreditReference,
  question,
  scoreCreditGame,
} from '../../tasks/credit.ts';
import { trueMoveValue } from '../../tasks/credit-values.ts';
import { creditMatchingDrills } from '../../tasks/credit-drills.ts';
import {
  checkMixture,
  createCreditDemonstrator,
  demonstratorMix,
  demonstratorSuccess,
} from '../../tasks/credit-demonstrator.ts';
import { playEpisode } from '../../tasks/protocol.ts';

const task = generateCreditTasks({ seed: 2, count: 1, split: 'test', design: 'v3' })[0]!;

describe('canonical states', () => {
  const variants = canonicalStates(task.reference);

  it('has every order of the told keys: 1, 3, 6 and 6 variants, each told value given by one useful question', () => {
    expect(CANONICAL_STATES.map((s) => variants.filter((v) => v.state === s).length)).toEqual([1, 3, 6, 6]);
    for (const v of variants) {
      const moves = classifyMoves(task.reference, [
        ...v.turns,
        { role: 'agent', content: question(v.told[0] ?? 'speed') },
      ]);
      expect(moves.slice(0, -1).every((m) => m.move === 'useful')).toBe(true);
      expect(v.turns.filter((t) => t.role === 'human').map((t) => keysIn(t.content)[0])).toEqual(v.told);
    }
  });

  it('classifies each message by the state, so a key is useful in one variant and repeated in another', () => {
    const byKey = new Map<string, Set<string>>();
    for (const v of variants.filter((x) => x.state === 'after 1 value')) {
      const moves = canonicalMoves(task.reference, v);
      expect(moves).toHaveLength(13);
      expect(moves.filter((m) => m.move === 'useful')).toHaveLength(2);
      expect(moves.filter((m) => m.move === 'repeated').map((m) => m.key)).toEqual([v.told[0]]);
      expect(moves.filter((m) => m.move === 'useless')).toHaveLength(9);
      for (const m of moves)
        if (m.key && CREDIT_V2_KEYS.includes(m.key))
          (byKey.get(m.key) ?? byKey.set(m.key, new Set()).get(m.key)!).add(m.move);
    }
    for (const k of CREDIT_V2_KEYS) expect([...byKey.get(k)!].sort()).toEqual(['repeated', 'useful']);
    // Every value told: the answer loses nothing, asking again gains nothing.
    const spent = variants.find((v) => v.state === 'budget spent')!;
    expect(canonicalMoves(task.reference, spent).filter((m) => m.move === 'answer')).toHaveLength(1);
  });
});

describe("design v3's demonstrator", () => {
  it('asks its useful questions in every order and double-checks every told key, with the same move mixture as v2', async () => {
    const firsts = new Map<string, number>();
    const repeats = new Map<string, number>();
    const games = [];
    const demo = createCreditDemonstrator({ seed: 5, design: 'v3' });
    for (const t of generateCreditTasks({ seed: 4, count: 300, split: 'train', design: 'v3' })) {
      const ep = await playEpisode({ task: t, agent: demo, collaborator: createCreditCollaborator(t) });
      const moves = classifyMoves(t.reference, ep.turns);
      const agent = ep.turns.filter((x) => x.role === 'agent');
      moves.forEach((m, i) => {
        const k = keysIn(agent[i]!.content)[0];
        if (m.move === 'useful' && m.before === 0 && k) firsts.set(k, (firsts.get(k) ?? 0) + 1);
        if (m.move === 'repeated' && k) repeats.set(k, (repeats.get(k) ?? 0) + 1);
      });
      games.push({ reference: t.reference, turns: ep.turns });
    }
    // Each key opens and is repeated in a fair share of games (v2 always opened with the first key).
    for (const k of CREDIT_V2_KEYS) {
      expect(firsts.get(k)! / [...firsts.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(0.2);
      expect(repeats.get(k)! / [...repeats.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(0.2);
    }
    const c = checkMixture(games, 'v3');
    expect(c.states.first.share.useful).toBeGreaterThan(0.5);
    expect(c.states.first.share.useful).toBeLessThan(0.7);
  });
});

describe("design v4's demonstrator", () => {
  it('prefers a key not told to a told one in every state with values missing, and plays its table (success 0.6^3 exactly)', async () => {
    for (const before of [1, 2]) {
      for (const lastGaveNew of [true, false]) {
        const asked = before + (lastGaveNew ? 0 : 1);
        if (asked >= CREDIT_K) continue; // the budget is spent: no question gives a value
        const p = demonstratorMix({ first: false, before, asked, lastGaveNew }, CREDIT_K, 'v4');
        // Per key: the useful mass is shared by the keys not told, the repeated mass by the told ones.
        expect(p.useful / (CREDIT_K - before)).toBeGreaterThan(p.repeated / before);
      }
    }
    // v3's table goes the other way after a new value, which is what a starter could not read (bench/credit/README.md).
    const v3 = demonstratorMix({ first: false, before: 1, asked: 1, lastGaveNew: true }, CREDIT_K, 'v3');
    expect(v3.useful / 2).toBeLessThan(v3.repeated / 1);
    expect(demonstratorSuccess(CREDIT_K, 'v4')).toBeCloseTo(0.216, 12);
    const demo = createCreditDemonstrator({ seed: 6, design: 'v4' });
    const games = [];
    for (const t of generateCreditTasks({ seed: 7, count: 600, split: 'train', design: 'v4' })) {
      games.push({
        reference: t.reference,
        turns: (await playEpisode({ task: t, agent: demo, collaborator: createCreditCollaborator(t) })).turns,
      });
    }
    const c = checkMixture(games, 'v4');
    // After a new value at least one value is told: v4's row there is the one row of every state with values missing.
    expect(c.designed['after new value']).toEqual({ useful: 0.6, repeated: 0.15, useless: 0.15, answer: 0.1 });
    expect(c.states['after new value'].share.repeated).toBeGreaterThan(0.1);
    expect(c.states['after new value'].share.repeated).toBeLessThan(0.2);
    expect(c.success / c.games).toBeGreaterThan(0.17);
    expect(c.success / c.games).toBeLessThan(0.26);
  });

  it("v5 plays v4's table with an answer that writes no values, in play, drills and canonical states alike", async () => {
    expect(demonstratorSuccess(CREDIT_K, 'v5')).toBe(demonstratorSuccess(CREDIT_K, 'v4'));
    const demo = createCreditDemonstrator({ seed: 6, design: 'v5' });
    const answers = new Set<string>();
    let success = 0;
    const tasks = generateCreditTasks({ seed: 7, count: 300, split: 'train', design: 'v5' });
    for (const t of tasks) {
      const { turns } = await playEpisode({ task: t, agent: demo, collaborator: createCreditCollaborator(t) });
      answers.add(turns.at(-1)!.content);
      if (scoreCreditGame(t.reference, turns).success) success++;
    }
    // Whatever was told, the answer's text is one string: it cannot tell a critic the outcome.
    expect([...answers]).toEqual([CREDIT_V5_ANSWER]);
    expect(success / tasks.length).toBeGreaterThan(0.14);
    expect(success / tasks.length).toBeLessThan(0.3);
    const drillAnswers = new Set(creditMatchingDrills(3, 20, 'v5').map((d) => d.at(-1)!.content));
    expect([...drillAnswers]).toEqual([CREDIT_V5_ANSWER]);
    const spent = canonicalStates(tasks[0]!.reference).find((v) => v.state === 'budget spent')!;
    const moves = canonicalMoves(tasks[0]!.reference, spent, 'v5');
    expect(moves.filter((m) => m.move === 'answer').map((m) => m.text)).toEqual([CREDIT_V5_ANSWER]);
    // Earlier designs still write the values told.
    expect(canonicalMoves(tasks[0]!.reference, spent, 'v4').find((m) => m.move === 'answer')!.text).toMatch(
      /"speed": \d/,
    );
  });

  it("v6 plays v5's games except once nothing more can be obtained, where it asks again half the time", async () => {
    // Its success is v5's: success counts the values obtained, and asking once done obtains none.
    expect(demonstratorSuccess(CREDIT_K, 'v6')).toBe(demonstratorSuccess(CREDIT_K, 'v5'));
    const done = { first: false, before: CREDIT_K, asked: CREDIT_K, lastGaveNew: true };
    expect(demonstratorMix(done, CREDIT_K, 'v6')).toEqual({ useful: 0, repeated: 0.5, useless: 0, answer: 0.5 });
    expect(demonstratorMix(done, CREDIT_K, 'v5')).toEqual({ useful: 0, repeated: 0.1, useless: 0, answer: 0.9 });
    const missing = { first: false, before: 1, asked: 1, lastGaveNew: true };
    expect(demonstratorMix(missing, CREDIT_K, 'v6')).toEqual(demonstratorMix(missing, CREDIT_K, 'v5'));
    // In play: of the moves made once every value was told, about half ask again (the 10th message always answers).
    const demo = createCreditDemonstrator({ seed: 6, design: 'v6' });
    let again = 0;
    let moves = 0;
    for (const t of generateCreditTasks({ seed: 7, count: 300, split: 'train', design: 'v6' })) {
      const { turns } = await playEpisode({ task: t, agent: demo, collaborator: createCreditCollaborator(t) });
      for (const m of classifyMoves(t.reference, turns).filter((x) => x.before === CREDIT_K)) {
        moves++;
        if (m.move !== 'answer') again++;
      }
      expect(turns.at(-1)!.content).toBe(CREDIT_V5_ANSWER);
    }
    expect(moves).toBeGreaterThan(50);
    expect(again / moves).toBeGreaterThan(0.35);
    expect(again / moves).toBeLessThan(0.6);
  });
});

describe('greedy paths', () => {
  const play = (letters: string): PlayedGame => {
    const turns: { role: string; content: string }[] = [];
    const order = ['speed', 'size', 'depth'];
    let next = 0;
    const told: string[] = [];
    for (const l of letters) {
      if (l === 'A') {
        turns.push({ role: 'agent', content: 'I WANT TO ANSWER:\ndef settings():\n    return {}' });
        break;
      }
      const key = l === 'U' ? order[next++]! : l === 'R' ? told[told.length - 1]! : 'width';
      turns.push({ role: 'agent', content: question(key) });
      if (l === 'U') told.push(key);
      turns.push({ role: 'human', content: 'x' });
    }
    return { taskId: 't1', reference: task.reference, turns, score: 2 / 3, success: false };
  };

  it('spells a game as its moves', () => {
    expect(movePath(task.reference, play('URUA').turns)).toBe('URUA');
    expect(movePath(task.reference, play('UURA').turns)).toBe('UURA');
    expect(trueMoveValue(classifyMoves(task.reference, play('URUA').turns)[1]!)).toBeCloseTo(-1 / 3);
  });

  it('never prints two policies with different greedy paths as one game, even at equal scores', () => {
    const starter = [play('URUA')];
    const rft = [play('UURA')];
    expect(starter[0]!.score).toBe(rft[0]!.score);
    expect(sameGreedyGames(starter, rft)).toBe(false);
    const lines = formatGreedyTable([
      { policy: 'starter', games: starter },
      { policy: 'rejection FT', games: rft },
      { policy: 'multi-turn DPO', games: [play('UURA')] },
    ]);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^ {2}starter +URUA \(100\.0 %\)/);
    expect(lines[2]).toMatch(/^ {2}rejection FT = multi-turn DPO +UURA/);
    expect(lines.join('\n')).not.toMatch(/starter = /);
    expect(greedySummary([...starter, ...rft, ...rft]).paths).toEqual([
      { path: 'UURA', games: 2 },
      { path: 'URUA', games: 1 },
    ]);
  });
});

describe("the actor's pairs read by state", () => {
  const t = parseCreditReference(task.reference);
  const playTurns = (qs: string[]) =>
    qs.flatMap((q, i) => [
      { role: 'agent', content: q },
      { role: 'human', content: creditReply(t, qs.slice(0, i), q).reply },
    ]);
  it('counts pairs by values told, and after 2 values the key left that the chosen side asks', () => {
    const [a, b, c] = t.keys as [string, string, string];
    // A played game a, b, a (repeat), then the answer: states before agent turns 0..3.
    const turns = playTurns([question(a), question(b), question(a)]);
    const sessions = new Map([['s1', { reference: task.reference, turns }]]);
    const pairs = [
      { sessionId: 's1', agentTurn: 0, chosenText: question(b), rejectedText: question('width') },
      { sessionId: 's1', agentTurn: 1, chosenText: question(c), rejectedText: question(a) },
      { sessionId: 's1', agentTurn: 2, chosenText: question(c) },
      { sessionId: 's1', agentTurn: 2, chosenText: question(a), rejectedText: question(b) },
      { sessionId: 's1', agentTurn: 3, chosenText: CREDIT_V5_ANSWER, rejectedText: question(a) },
      { sessionId: 'elsewhere', agentTurn: 0, chosenText: question(a) },
    ];
    const r = readPairs(pairs, sessions, 'v6');
    expect(r.pairs).toBe(5);
    // Turn 3 follows three questions: the budget is spent, whatever it was told.
    expect(r.byValuesTold).toEqual({ '0': 1, '1': 1, '2': 2, spent: 1 });
    expect(r.usefulChosenAfterTwoByKey).toEqual({ [c]: 1 });
    // Useful over useless and over a repeat agree; a repeat against a repeat is a tie; the answer once the budget is
    // spent against asking again agrees (an idle question costs under v5 and v6); the pair without a rejected side
    // is not judged.
    expect(r.byTrueValues).toEqual({ agree: 3, tie: 1, against: 0 });
  });
});
