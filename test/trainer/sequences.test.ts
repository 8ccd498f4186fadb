// How over-long dialogues are cut: on the left (the default: the oldest tokens go) or on the right (the official
// datasets, Hugging Face's truncation side: the newest go), with the agent turns' spans following the cut.
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../tasks/agent.ts';
import { ChatFormatter } from '../../trainer/model/chat.ts';
import { TextTokenizer } from '../../trainer/model/tokenizer.ts';
import { encodeDialogue } from '../../trainer/sequences.ts';

const dialogue: ChatMessage[] = [
  { role: 'system', content: 'You write Python functions.' },
  { role: 'user', content: 'Write a function that adds two numbers.' },
  { role: 'assistant', content: 'Are the inputs integers or floats?' },
  { role: 'user', content: 'Integers.' },
  { role: 'assistant', content: 'I WANT TO ANSWER: def add(a, b): return a + b' },
];

describe('encodeDialogue truncation', async () => {
  const tokenizer = await TextTokenizer.load('trainer/recipes/starter-checkpoint/seed-1234');
  const m = { tokenizer, chat: ChatFormatter.fromTokenizer(tokenizer) };
  const full = encodeDialogue(m, dialogue, 100_000);

  it('keeps everything that fits, on either side', () => {
    expect(encodeDialogue(m, dialogue, full.ids.length, 'right')).toEqual(full);
    expect(encodeDialogue(m, dialogue, full.ids.length, 'left')).toEqual(full);
    expect(full.turns).toHaveLength(2);
  });

  it("'right' drops the newest tokens: the last turn keeps what fits", () => {
    const last = full.turns[1]!;
    const ctx = last.start + 3;
    const cut = encodeDialogue(m, dialogue, ctx, 'right');
    expect(cut.ids).toEqual(full.ids.slice(0, ctx));
    expect(cut.turns).toEqual([full.turns[0], { start: last.start, end: ctx }]);
    expect(encodeDialogue(m, dialogue, last.start, 'right').turns).toEqual([full.turns[0]]);
  });

  it("'left' (the default) drops the oldest tokens and shifts the turns", () => {
    const ctx = full.ids.length - full.turns[0]!.end + 1; // the first turn keeps one token: no context for it, dropped
    const cut = encodeDialogue(m, dialogue, ctx);
    const shift = full.ids.length - ctx;
    expect(cut.ids).toEqual(full.ids.slice(shift));
    expect(cut.turns).toEqual([{ start: full.turns[1]!.start - shift, end: full.turns[1]!.end - shift }]);
  });
});
