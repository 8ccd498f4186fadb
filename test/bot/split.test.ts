import { describe, expect, it } from 'vitest';
import { splitCodeBlock, splitText, DISCORD_MESSAGE_LIMIT } from '../../bot/split.ts';
import { hiddenInfoParts } from '../../bot/discord/present.ts';

describe('splitting long messages for Discord', () => {
  it('splits text at line breaks, never over the limit, losing nothing', () => {
    const text = Array.from({ length: 300 }, (_, i) => `line ${i} ${'x'.repeat(i % 40)}`).join('\n');
    const parts = splitText(text);
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(DISCORD_MESSAGE_LIMIT);
    expect(parts.join('\n')).toBe(text);
  });

  it('cuts a line with no break at the limit rather than dropping it', () => {
    const text = 'y'.repeat(4500);
    const parts = splitText(text);
    expect(parts.map((p) => p.length)).toEqual([2000, 2000, 500]);
    expect(parts.join('')).toBe(text);
  });

  it('keeps every part of long code inside its own code block', () => {
    const code = Array.from({ length: 200 }, (_, i) => `    total += values[${i}] * ${i}  # step ${i}`).join('\n');
    const blocks = splitCodeBlock(code, 'python');
    expect(blocks.length).toBeGreaterThan(1);
    for (const b of blocks) {
      expect(b.length).toBeLessThanOrEqual(DISCORD_MESSAGE_LIMIT);
      expect(b.startsWith('```python\n')).toBe(true);
      expect(b.endsWith('\n```')).toBe(true);
    }
    const inner = blocks.map((b) => b.slice('```python\n'.length, -'\n```'.length)).join('\n');
    expect(inner).toBe(code);
  });

  it('shows a long reference over several private messages, all of it', () => {
    const code =
      'def f(x):\n' +
      Array.from({ length: 150 }, (_, i) => `    x = x + ${i}  # a fairly long comment line`).join('\n');
    const parts = hiddenInfoParts(
      { kind: 'backend', instructions: 'Answer briefly.', referenceCode: code },
      undefined,
      '123456789012345678',
    );
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) expect((p.content as string).length).toBeLessThanOrEqual(DISCORD_MESSAGE_LIMIT);
    const all = parts.map((p) => p.content).join('\n');
    for (const line of code.split('\n')) expect(all).toContain(line);
  });
});
