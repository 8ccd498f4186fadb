// The calibration metrics on hand-made dialogues (every value worked out by hand), and the pairing by task.
import { describe, expect, it } from 'vitest';
import {
  calibrationRows,
  factsStated,
  formatCalibrationTable,
  formatLeakRate,
  hiddenFacts,
  leakRate,
  METRICS,
  saysDontKnow,
  sessionMetrics,
  type CalibrationSession,
  type SessionMetrics,
} from '../../tasks/calibration.ts';
import { keywords } from '../../tasks/words.ts';

const REFERENCE = [
  'RATE = 0.15  # the tax rate',
  'LIMIT = 250',
  "LABEL = 'high_risk'",
  '',
  'def tax(amount, member=False):',
  '    """Tax of an amount; 1 label for large ones."""',
  '    if amount > LIMIT:',
  '        return LABEL',
  '    return round(amount * RATE, 2)',
].join('\n');
const DESCRIPTION =
  'Write a function that computes the tax on an amount. The signature of the function is: def tax(amount, member=False)';

const session = (replies: string[], o: Partial<CalibrationSession> = {}): CalibrationSession => ({
  kind: 'backend',
  reference: REFERENCE,
  description: DESCRIPTION,
  turns: [
    ...replies.flatMap((r, i) => [
      { role: 'agent' as const, content: `Question ${i + 1}?` },
      { role: 'human' as const, content: r },
    ]),
    { role: 'agent', content: 'I WANT TO ANSWER: def tax(amount, member=False): return 0' },
  ],
  evaluation: { score: 0.4, success: false },
  ...o,
});

describe('the metrics of one session', () => {
  it('finds the hidden facts of a backend reference: its numbers but 0 and 1, its quoted strings, less the description', () => {
    // 0.15, 250 and the 2 of round(..., 2); the docstring's "1" and the False of the signature are not facts.
    expect(hiddenFacts('backend', REFERENCE, DESCRIPTION)).toEqual([
      { type: 'number', value: 0.15 },
      { type: 'number', value: 250 },
      { type: 'number', value: 2 },
      { type: 'phrase', text: 'high risk' },
    ]);
    // A number the description already says is public.
    expect(
      hiddenFacts('backend', REFERENCE, `${DESCRIPTION} Amounts over 250 are special.`).map((f) =>
        f.type === 'number' ? f.value : f.type === 'phrase' ? f.text : f.word,
      ),
    ).toEqual([0.15, 2, 'high risk']);
  });

  it('reads a number in the forms people say it, and a phrase with spaces for underscores', () => {
    const facts = hiddenFacts('backend', REFERENCE, DESCRIPTION);
    expect(factsStated(facts, 'The rate is 15%.')).toEqual([0]);
    expect(factsStated(facts, 'Use 0.15, and say HIGH-RISK above 250.')).toEqual([0, 1, 3]);
    expect(factsStated(facts, 'The rate is 1.5 and 25 is the limit; a highrisk case')).toEqual([]);
  });

  it('computes every metric of a dialogue', () => {
    const m = sessionMetrics(
      session(['It is 15%.', "I don't know.", 'Above 250 it should say high risk, and the tax is 15 percent.']),
    );
    expect(m).toEqual({
      success: 0,
      score: 0.4,
      agentTurns: 4,
      // 10, 13 and 61 characters.
      replyChars: 28,
      dontKnowShare: 1 / 3,
      // 0.15 (twice), 250 and "high risk": three distinct facts in three replies.
      factsPerReply: 1,
      referencePasted: 0,
    } satisfies SessionMetrics);
  });

  it('counts a pasted reference, and leaves reply metrics empty when there was no reply', () => {
    const pasted = sessionMetrics(session([`Here:\n${REFERENCE}`], { evaluation: { score: 1, success: true } }));
    expect(pasted).toMatchObject({
      success: 1,
      score: 1,
      agentTurns: 2,
      dontKnowShare: 0,
      factsPerReply: 4,
      referencePasted: 1,
    });
    const silent = sessionMetrics(session([]));
    expect(silent.agentTurns).toBe(1);
    expect(silent.replyChars).toBeNaN();
    expect(silent.dontKnowShare).toBeNaN();
    expect(silent.factsPerReply).toBeNaN();
    expect(silent.referencePasted).toBe(0);
  });

  it("finds a frontend page's words and colours, less the description's", () => {
    const page =
      '<html><body class="bg-blue-500 text-white"><h1>Lemon Bakery</h1><p>Fresh bread daily</p></body></html>';
    const facts = hiddenFacts('frontend', page, 'A website for a bakery');
    const words = facts.map((f) => (f.type === 'word' ? f.word : ''));
    // Words as the rule simulator matches them (stemmed: "blue" is "blu").
    expect(new Set(words)).toEqual(new Set(keywords('lemon fresh bread daily blue white')));
    const m = sessionMetrics({
      kind: 'frontend',
      reference: page,
      description: 'A website for a bakery',
      turns: [
        { role: 'agent', content: 'Colours?' },
        { role: 'human', content: 'Blue background, and it is called Lemon.' },
        { role: 'agent', content: 'Anything else?' },
        { role: 'human', content: 'No idea.' },
      ],
      evaluation: { score: 0.7, success: false },
    });
    expect(m).toMatchObject({ agentTurns: 2, dontKnowShare: 0.5, factsPerReply: 1, referencePasted: 0 });
  });

  it('recognises replies saying the collaborator does not know', () => {
    for (const s of [
      "I don't know.",
      'I do not know about that',
      'dunno',
      'Not sure, sorry.',
      'No idea!',
      "I don't know about the rest.",
      'idk',
    ])
      expect(saysDontKnow(s), s).toBe(true);
    for (const s of ['I know: 15%.', 'Make sure it rounds.', 'The ideas are fine', 'Knowing the rate helps'])
      expect(saysDontKnow(s), s).toBe(false);
  });
});

describe('people against the simulator, paired by task', () => {
  const m = (success: number, score: number, replyChars = 10): SessionMetrics => ({
    success,
    score,
    agentTurns: 3,
    replyChars,
    dontKnowShare: 0,
    factsPerReply: 1,
    referencePasted: 0,
  });

  it("takes each task's mean on each side and an interval over the per-task differences", () => {
    const people = [
      { taskId: 'A', metrics: m(1, 0.8) },
      { taskId: 'A', metrics: m(0, 0.6, NaN) },
      { taskId: 'B', metrics: m(1, 1, 30) },
      { taskId: 'C', metrics: m(1, 1) }, // no game of C: not paired
    ];
    const simulator = [
      { taskId: 'A', metrics: m(0, 0.2, 40) },
      { taskId: 'A', metrics: m(0, 0.2, 20) },
      { taskId: 'B', metrics: m(1, 0.8) },
      { taskId: 'B', metrics: m(0, 0.6) },
      { taskId: 'D', metrics: m(0, 0) },
    ];
    const rows = calibrationRows(people, simulator);
    expect(rows.map((r) => r.metric)).toEqual(METRICS.map((x) => x.name));
    const by = Object.fromEntries(rows.map((r) => [r.metric, r]));
    // Success: A 0.5 - 0, B 1 - 0.5: both differences 0.5, no spread.
    expect(by.success).toMatchObject({
      tasks: 2,
      people: { estimate: 0.75 },
      simulator: { estimate: 0.25 },
      difference: { estimate: 0.5, lo: 0.5, hi: 0.5, n: 2 },
    });
    // Score: A 0.7 - 0.2 = 0.5, B 1 - 0.7 = 0.3; mean 0.4, sd 0.1414, t(0.975, 1) = 12.706: half-width 1.2706, and a
    // difference of shares stays within [-1, 1].
    expect(by.score!.difference.estimate).toBeCloseTo(0.4, 12);
    expect(by.score!.difference.lo).toBeCloseTo(-0.8706, 3);
    expect(by.score!.difference.hi).toBe(1);
    // Reply length: A's NaN is left out (10 - 30), B (30 - 10): -20 and +20, sd 28.28, half-width 254.1 (not clipped);
    // people's side 10 and 30: 20 +- 127.1, but no length is below 0.
    expect(by.replyChars).toMatchObject({
      tasks: 2,
      people: { estimate: 20, lo: 0 },
      simulator: { estimate: 20 },
      difference: { estimate: 0 },
    });
    expect(by.replyChars!.difference.lo).toBeCloseTo(-254.12, 1);
    expect(by.replyChars!.difference.hi).toBeCloseTo(254.12, 1);
    expect(by.replyChars!.people.hi).toBeCloseTo(147.06, 1);
    const table = formatCalibrationTable(rows).split('\n');
    expect(table[0]).toMatch(/^metric\s+people\s+simulator\s+people - simulator \[95% CI\]\s+tasks$/);
    expect(table).toHaveLength(1 + METRICS.length);
    expect(table[1]).toMatch(/^success\s+75\.0%\s+25\.0%\s+\+50\.0% \[\+50\.0%, \+50\.0%\]\s+2$/);
  });
});

describe('the leak rate', () => {
  const session = (referencePasted: number) => ({
    metrics: {
      success: 1,
      score: 1,
      agentTurns: 2,
      replyChars: 10,
      dontKnowShare: 0,
      factsPerReply: 1,
      referencePasted,
    },
  });

  it('is the share of sessions whose replies pasted the reference, with a Wilson interval over sessions', () => {
    const l = leakRate([session(1), session(0), session(0), session(0), session(NaN)]);
    // 1 of 4 (the NaN is no session with a measure); Wilson at z = 1.96: [4.56%, 69.9%].
    expect(l).toMatchObject({ sessions: 4, leaked: 1, rate: { estimate: 0.25, n: 4 } });
    expect(l.rate.lo).toBeCloseTo(0.0456, 3);
    expect(l.rate.hi).toBeCloseTo(0.6994, 3);
    expect(formatLeakRate(l)).toBe('25.0% [4.6%, 69.9%] (1 of 4 sessions)');
    expect(formatLeakRate(leakRate([]))).toBe('- (no sessions)');
    expect(leakRate([session(0), session(0)]).rate).toMatchObject({ estimate: 0, lo: 0 });
  });
});
