// Collaborator-quality signals on hand-made sessions: each fires on what it is meant to catch and stays quiet on
// a careful person's natural-language answers.
import { describe, expect, it } from 'vitest';
import {
  formatSignals,
  isEmptyReply,
  pasteMeasure,
  personQuality,
  ratingContradicts,
  readingMs,
  sessionScore,
  sessionSignals,
  tokens,
  wasAbandoned,
  type QualitySession,
} from '../../tasks/quality.ts';

const REFERENCE = `def shipping_cost(weight, express):
    base = 4.5 if weight <= 2 else 4.5 + (weight - 2) * 1.25
    if express:
        base = base * 1.8 + 3
    return round(base, 2)`;
const DESCRIPTION =
  'I need a function for the shipping cost of a parcel. The signature of the function is: def shipping_cost(weight, express):';

function session(replies: { text: string; afterMs: number }[], extra: Partial<QualitySession> = {}): QualitySession {
  const t0 = Date.parse('2026-01-01T10:00:00Z');
  let t = t0;
  const turns: QualitySession['turns'][number][] = [];
  for (const r of replies) {
    turns.push({
      role: 'agent',
      content: 'How is the cost computed for heavy parcels, and what does express change?',
      at: new Date(t),
    });
    t += r.afterMs;
    turns.push({ role: 'human', content: r.text, at: new Date(t) });
    t += 5_000;
  }
  turns.push({ role: 'agent', content: 'I WANT TO ANSWER: def shipping_cost(weight, express): ...', at: new Date(t) });
  return {
    kind: 'backend',
    hiddenReference: REFERENCE,
    description: DESCRIPTION,
    turns,
    status: 'answered',
    endReason: 'answered',
    evaluation: { score: 1, success: true },
    rating: 5,
    ...extra,
  };
}

describe('reference pasted', () => {
  it('tokens ignore case, whitespace, quotes and backticks', () => {
    expect(tokens('```py\nReturn  round(base, 2)```')).toEqual(['py', 'return', 'round', '(', 'base', ',', '2', ')']);
  });

  it('a careful natural-language answer is not pasting, even with the numbers in it', () => {
    const s = sessionSignals(
      session([
        {
          text: 'It is 4.5 up to 2 kg, then 1.25 for every extra kg. Express multiplies by 1.8 and adds 3, rounded to cents.',
          afterMs: 40_000,
        },
      ]),
    );
    expect(s.referencePasted).toBe(false);
    expect(s.paste.longestTokens).toBeLessThan(6);
    expect(sessionScore(s)).toBe(1);
  });

  it('the reference pasted verbatim, re-indented or in a code fence is caught', () => {
    const body = REFERENCE.split('\n').slice(1).join('\n');
    for (const text of [
      body,
      '```python\n' + body.replace(/\n\s+/g, '\n') + '\n```',
      `the code is: ${body.toUpperCase()}`,
    ]) {
      const s = sessionSignals(session([{ text, afterMs: 40_000 }]));
      expect(s.referencePasted).toBe(true);
      expect(sessionScore(s)).toBe(0);
    }
  });

  it('near-verbatim: a renamed variable does not break the stretch', () => {
    const renamed = REFERENCE.split('\n')
      .slice(1)
      .join('\n')
      .replace(/\bbase\b/g, 'cost');
    const m = pasteMeasure(REFERENCE, DESCRIPTION, ['first line', renamed]);
    // Shingles around each renamed token fail, but stretches between them remain long and are bridged.
    expect(m.reply).toBe(1);
    expect(m.longestTokens).toBeGreaterThanOrEqual(6);
  });

  it('the public signature repeated does not count', () => {
    const m = pasteMeasure(REFERENCE, DESCRIPTION, ['def shipping_cost(weight, express):']);
    expect(m.longestTokens).toBe(0);
  });

  // The reference of the case that was flagged wrongly: the reply paraphrased a comment, which is the task's explanation.
  const COMMENTED = `def count_days(dates):
    """Count the distinct days among the given dates.

    The dates are 'YYYY-MM-DD' strings in any order, and the same day twice counts once.
    """
    # The dates are 'YYYY-MM-DD' strings in any order, and the same day twice counts once.
    seen = set()
    for d in dates:
        year, month, day = d.split('-')  # 'YYYY-MM-DD'
        seen.add((int(year), int(month), int(day)))
    return len(seen)`;
  const commented = (text: string) =>
    session([{ text, afterMs: 40_000 }], {
      hiddenReference: COMMENTED,
      description: 'Count the days. The signature of the function is: def count_days(dates):',
    });

  it("repeating a comment or docstring of the reference (the task's explanation) is not pasting", () => {
    const s = sessionSignals(
      commented("The dates are 'YYYY-MM-DD' strings in any order, and the same day twice counts once."),
    );
    expect(s.referencePasted).toBe(false);
    expect(s.paste.longestTokens).toBe(0);
    expect(sessionScore(s)).toBe(1);
  });

  it('a real paste of the commented reference is still caught, comments and all or without them', () => {
    const body = COMMENTED.split('\n').slice(1).join('\n');
    for (const text of [body, body.replace(/\s*#.*$/gm, '').replace(/"""[^]*?"""/, '')]) {
      const s = sessionSignals(commented(text));
      expect(s.referencePasted).toBe(true);
      expect(s.paste.longestTokens).toBeGreaterThanOrEqual(16);
    }
  });

  it('frontend references are never "pasted" (the person sees a screenshot)', () => {
    const s = sessionSignals(
      session([{ text: '<div class="p-4"><h1>Welcome to Acme, the best shop</h1></div>', afterMs: 40_000 }], {
        kind: 'frontend',
        hiddenReference: '<div class="p-4"><h1>Welcome to Acme, the best shop</h1></div>',
      }),
    );
    expect(s.referencePasted).toBe(false);
  });
});

describe('other signals', () => {
  it('empty and one-word replies', () => {
    expect(isEmptyReply('')).toBe(true);
    expect(isEmptyReply('  ok ')).toBe(true);
    expect(isEmptyReply('?')).toBe(true);
    expect(isEmptyReply('yes, ten items')).toBe(false);
    const s = sessionSignals(
      session([
        { text: 'ok', afterMs: 30_000 },
        { text: 'idk', afterMs: 30_000 },
        { text: 'It doubles for express.', afterMs: 30_000 },
      ]),
    );
    expect(s.emptyShare).toBeCloseTo(2 / 3, 10);
    expect(s.emptyReplies).toBe(true);
    expect(sessionScore(s)).toBeCloseTo(1 - 0.35 * (2 / 3), 10);
  });

  it('replies faster than one could read the question', () => {
    // The question has 13 words: at 8 words a second, 1.625 s to read.
    expect(readingMs('How is the cost computed for heavy parcels, and what does express change?')).toBe(1625);
    const s = sessionSignals(
      session([
        { text: 'It adds 1.25 a kilogram.', afterMs: 900 },
        { text: 'Express is 1.8 times plus 3.', afterMs: 20_000 },
      ]),
    );
    expect(s.fastShare).toBe(0.5);
    expect(s.tooFast).toBe(true);
  });

  it('ratings contradicting the evaluation, and abandonment', () => {
    expect(ratingContradicts(5, { score: 0.1, success: false })).toBe(true);
    expect(ratingContradicts(1, { score: 1, success: true })).toBe(true);
    expect(ratingContradicts(3, { score: 0, success: false })).toBe(false);
    expect(ratingContradicts(null, { score: 0, success: false })).toBe(false);
    expect(wasAbandoned({ status: 'abandoned', endReason: 'stopped' })).toBe(true);
    expect(wasAbandoned({ status: 'expired', endReason: 'idle' })).toBe(true);
    expect(wasAbandoned({ status: 'abandoned', endReason: 'agent-error: boom' })).toBe(false);
    expect(wasAbandoned({ status: 'answered', endReason: 'answered' })).toBe(false);
  });

  it('a person: mean score and how often each signal fired', () => {
    const good = sessionSignals(session([{ text: 'It is 4.5 below 2 kg.', afterMs: 30_000 }]));
    const pasted = sessionSignals(session([{ text: REFERENCE, afterMs: 30_000 }]));
    const p = personQuality([good, pasted, good]);
    expect(p.score).toBeCloseTo(2 / 3, 10);
    expect(p.counts.referencePasted).toBe(1);
    expect(formatSignals(p.counts)).toBe('referencePasted x1');
    expect(formatSignals(personQuality([good]).counts)).toBe('none');
    expect(Number.isNaN(personQuality([]).score)).toBe(true);
  });
});

describe('gold checks', () => {
  it('a reply may state the numbers of the hidden information (also as percentages), not others', async () => {
    const { goldViolations } = await import('../../tasks/quality.ts');
    expect(
      goldViolations(REFERENCE, DESCRIPTION, 'What is the base price?', 'It is 4.5 up to 2 kg, then 1.25 a kg.'),
    ).toEqual([]);
    expect(goldViolations('rate = 0.15', '', 'Which discount?', 'A 15% discount.')).toEqual([]);
    expect(goldViolations('rate = 15', '', 'Which discount?', 'Take 0.15 off.')).toEqual([]);
    expect(goldViolations(REFERENCE, DESCRIPTION, 'What is the base price?', 'I do not know.')).toEqual([]);
    expect(
      goldViolations(REFERENCE, DESCRIPTION, 'What is the base price?', 'It is 9.99, and 4.5 for express.'),
    ).toEqual(['9.99']);
  });

  it('a gold session with a made-up number fails the check and loses half its score; a normal one is not checked', () => {
    const made = [{ text: 'Express adds 17 euros.', afterMs: 30_000 }];
    const gold = sessionSignals(session(made, { gold: true }));
    expect(gold.goldFailed).toBe(true);
    expect(gold.goldViolations).toEqual(['17']);
    expect(sessionScore(gold)).toBeCloseTo(0.5, 12);
    expect(sessionSignals(session(made)).goldFailed).toBe(false);
  });
});
