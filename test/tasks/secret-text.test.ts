// A secret is hidden where it stands as a whole word, not inside another word (a key `x` in a host name).
import { describe, expect, it } from 'vitest';
import { scrubSecret } from '../../tasks/secret-text.ts';

describe('scrubSecret', () => {
  it('replaces whole occurrences only', () => {
    expect(scrubSecret('http://gpu-box:8000 refused key x', 'x')).toBe('http://gpu-box:8000 refused key [redacted]');
    expect(scrubSecret('Authorization: Bearer sk-abc.123 (sk-abc.123)', 'sk-abc.123')).toBe(
      'Authorization: Bearer [redacted] ([redacted])',
    );
    expect(scrubSecret('?key=sk-abc&x=1', 'sk-abc', '***')).toBe('?key=***&x=1');
    // Inside a longer word it is another word.
    expect(scrubSecret('token sk-abcdef', 'sk-abc')).toBe('token sk-abcdef');
  });

  it('takes the secret literally and leaves text alone without one', () => {
    expect(scrubSecret('a+b a+b? a+bc', 'a+b')).toBe('[redacted] [redacted]? a+bc');
    expect(scrubSecret('$1 and $& stay', '$1')).toBe('[redacted] and $& stay');
    expect(scrubSecret('nothing', '')).toBe('nothing');
  });
});
