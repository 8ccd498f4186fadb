import { describe, expect, it } from 'vitest';
import { CHATML_TEMPLATE, ChatFormatter } from '../../../trainer/model/chat.ts';
import type { ChatMessage } from '../../../tasks/agent.ts';

const dialogue: ChatMessage[] = [
  { role: 'system', content: 'You are a helpful agent.' },
  { role: 'user', content: 'Write a function.' },
  { role: 'assistant', content: 'Which inputs?' },
  { role: 'user', content: 'Two ints.' },
];

// The Llama-3.1 instruct template, abridged to the parts a plain dialogue exercises (no tools).
const LLAMA3_TEMPLATE =
  "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}";

describe('chat formatting', () => {
  it('formats a multi-turn ChatML dialogue exactly, with the generation prompt', () => {
    const f = new ChatFormatter(CHATML_TEMPLATE);
    expect(f.format(dialogue, { addGenerationPrompt: true })).toBe(
      '<|im_start|>system\nYou are a helpful agent.<|im_end|>\n' +
        '<|im_start|>user\nWrite a function.<|im_end|>\n' +
        '<|im_start|>assistant\nWhich inputs?<|im_end|>\n' +
        '<|im_start|>user\nTwo ints.<|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
    expect(f.format(dialogue).endsWith('Two ints.<|im_end|>\n')).toBe(true);
  });

  it("renders a model's own template with its special tokens", () => {
    const f = new ChatFormatter(LLAMA3_TEMPLATE, { bos_token: '<|begin_of_text|>' });
    expect(f.format(dialogue.slice(0, 2), { addGenerationPrompt: true })).toBe(
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful agent.<|eot_id|>' +
        '<|start_header_id|>user<|end_header_id|>\n\nWrite a function.<|eot_id|>' +
        '<|start_header_id|>assistant<|end_header_id|>\n\n',
    );
  });

  it('marks exactly the assistant turns as trainable', () => {
    const f = new ChatFormatter(CHATML_TEMPLATE);
    const full = [...dialogue, { role: 'assistant' as const, content: 'def f(a, b): return a + b' }];
    const segs = f.segments(full);
    expect(segs.map((s) => s.text).join('')).toBe(f.format(full));
    expect(segs.filter((s) => s.train).map((s) => s.text)).toEqual([
      'Which inputs?<|im_end|>\n',
      'def f(a, b): return a + b<|im_end|>\n',
    ]);
  });

  it('reports template errors clearly', () => {
    expect(() => new ChatFormatter('{% for m in messages %}')).toThrow(/chat template/);
    const f = new ChatFormatter("{{ raise_exception('roles must alternate') }}");
    expect(() => f.format(dialogue)).toThrow(/roles must alternate/);
  });
});
