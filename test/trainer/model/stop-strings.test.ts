import { describe, expect, it } from 'vitest';
import { StopMatcher } from '../../../trainer/model/stop-strings.ts';

/** Feeds `pieces` one after another as a growing text; returns the first match and the text it was found in. */
function feed(m: StopMatcher, pieces: string[]) {
  let text = '';
  for (const p of pieces) {
    text += p;
    const match = m.find(text);
    if (match) return { match, text };
  }
  return { match: undefined, text };
}

describe('StopMatcher', () => {
  it('finds a stop string that straddles the pieces it arrived in', () => {
    const { match, text } = feed(new StopMatcher(['</answer>']), ['the result', ' is 4</an', 'sw', 'er> and more']);
    expect(match).toEqual({ at: text.indexOf('</answer>'), stop: '</answer>' });
    expect(text.slice(0, match!.at)).toBe('the result is 4');
  });

  it('reports the earliest stop, and among stops at the same place the first listed', () => {
    expect(new StopMatcher(['world', 'lo w']).find('hello world')).toEqual({ at: 3, stop: 'lo w' });
    expect(new StopMatcher(['ab', 'abc']).find('xxabc')).toEqual({ at: 2, stop: 'ab' });
    expect(new StopMatcher(['abc', 'ab']).find('xxabc')).toEqual({ at: 2, stop: 'abc' });
  });

  it('finds nothing without stops, or when none occurs', () => {
    expect(new StopMatcher([]).find('anything at all')).toBeUndefined();
    expect(feed(new StopMatcher(['STOP']), ['sto', 'p', ' S', 'TO', 'p']).match).toBeUndefined();
  });

  it('still finds a stop whose first character replaced undecoded bytes at the old end of the text', () => {
    // Byte-level tokens: '€' arrives as three bytes; until the last one it decodes to replacement characters,
    // so the text can get shorter while it grows.
    const m = new StopMatcher(['€5']);
    expect(m.find('costs \uFFFD\uFFFD')).toBeUndefined();
    expect(m.find('costs €5')).toEqual({ at: 6, stop: '€5' });
  });

  it('does not search again text it has searched, beyond what a match starting there could reach', () => {
    const m = new StopMatcher(['ab']);
    expect(m.find('xxxxxxxxxx')).toBeUndefined();
    // A text that changed far back (never the case for a completion) is not searched there: the search is incremental.
    expect(m.find('ab' + 'x'.repeat(8) + 'y')).toBeUndefined();
    expect(m.find('ab' + 'x'.repeat(8) + 'yab')).toEqual({ at: 11, stop: 'ab' });
  });

  it('names how much of the end of the text may still become a stop string', () => {
    const m = new StopMatcher(['</answer>', 'END']);
    expect(m.pendingLength('done </ans')).toBe(5);
    expect(m.pendingLength('the EN')).toBe(2);
    expect(m.pendingLength('the E')).toBe(1);
    expect(m.pendingLength('nothing here')).toBe(0);
    expect(new StopMatcher([]).pendingLength('abc')).toBe(0);
  });
});
