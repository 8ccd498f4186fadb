import { describe, expect, it } from 'vitest';
import { stripCodeFences } from '../../tasks/answer.ts';

describe('stripCodeFences', () => {
  it('leaves unfenced code alone except for surrounding blank lines', () => {
    expect(stripCodeFences('\n\ndef f(x):\n    return x\n\n')).toBe('def f(x):\n    return x');
    expect(stripCodeFences('    indented = 1\n')).toBe('    indented = 1');
  });

  it('takes the code out of a fence with or without a language tag, dropping prose around it', () => {
    expect(stripCodeFences('Here it is:\n```python\ndef f():\n    return 1\n```\nHope it helps.')).toBe(
      'def f():\n    return 1',
    );
    expect(stripCodeFences('```\n<html></html>\n```')).toBe('<html></html>');
    expect(stripCodeFences('~~~py\nx = 1\n~~~')).toBe('x = 1');
    expect(stripCodeFences('```python\r\nx = 1\r\n```\r\n')).toBe('x = 1');
  });

  it('joins several blocks of the same language and drops blocks in another one', () => {
    const text =
      '```python\ndef helper():\n    return 2\n```\nthen\n```python\ndef f():\n    return helper()\n```\n```bash\npip install nothing\n```\n```\n# untagged\n```';
    expect(stripCodeFences(text)).toBe('def helper():\n    return 2\n\ndef f():\n    return helper()\n\n# untagged');
  });

  it('keeps a longer fence open across shorter ones inside it', () => {
    expect(stripCodeFences('````markdown\n```python\nx = 1\n```\n````')).toBe('```python\nx = 1\n```');
  });

  it('handles a reply cut off inside a fence, and a stray closing fence', () => {
    expect(stripCodeFences('Sure:\n```python\ndef f():\n    return 1')).toBe('def f():\n    return 1');
    expect(stripCodeFences('def f():\n    return 1\n```')).toBe('def f():\n    return 1');
    expect(stripCodeFences('')).toBe('');
  });
});
