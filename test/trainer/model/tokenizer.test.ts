import { describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_SPECIAL_TOKENS, chatMlTokenizerConfig, trainByteLevelBpe } from '../../../trainer/model/bpe-train.ts';
import { TextTokenizer } from '../../../trainer/model/tokenizer.ts';
import { CHATML_TEMPLATE } from '../../../trainer/model/chat.ts';

// A corpus with prose, code and non-Latin text, so merges of every kind are learnt.
function corpus(): string[] {
  const out: string[] = [];
  for (let i = 0; i < 60; i++) {
    out.push(`The user wants a function that returns the sum of ${i} numbers. Could you clarify the edge cases?`);
    out.push(
      `def total_${i}(values, start=0):\n    result = start\n    for v in values:\n        result += v * ${i}\n    return result\n`,
    );
    out.push(`<div class="p-4 text-lg">Café crème, naïve façade — 東京の天気 ${i} 🎉</div>`);
  }
  return out;
}

const samples = [
  'Hello, world! How are you today?',
  "It's   spaced\toddly\n\n  and ends with spaces   ",
  'def f(x: int) -> int:\n    if x < 0:\n        return -x  # abs\n    return x ** 2\n',
  '<html><body class="bg-gray-100">{"a": [1, 2.5e-3, null]}</body></html>',
  'Ünïcödé: Grüße, 日本語のテキスト, русский текст, emoji 👩‍💻🚀, math ∑∫√, arabic مرحبا',
  ' leading space, trailing newline\n',
  'never-seen-words: zyxwvut qqqq ~~~ \u00a0 \u200b',
];

describe('byte-level BPE tokenizer', () => {
  const json = trainByteLevelBpe(corpus(), { vocabSize: 700 });
  const tok = new TextTokenizer({
    tokenizerJson: json as unknown as Record<string, unknown>,
    tokenizerConfig: chatMlTokenizerConfig(CHATML_TEMPLATE),
  });

  it('writes a tokenizer.json of the Hugging Face BPE shape', () => {
    expect(json.model.type).toBe('BPE');
    expect(json.decoder).toMatchObject({ type: 'ByteLevel' });
    expect(json.added_tokens.map((t) => t.content)).toEqual([...DEFAULT_SPECIAL_TOKENS]);
    expect(json.added_tokens.every((t) => t.special)).toBe(true);
    expect(Object.keys(json.model.vocab).length).toBeLessThanOrEqual(700);
    expect(json.model.merges.length).toBeGreaterThan(100);
    // Every merge joins two existing symbols into a symbol with a later id, as HF's loader requires.
    for (const m of json.model.merges) {
      const [a, b] = m.split(' ');
      const ab = json.model.vocab[a! + b!];
      expect(ab).toBeDefined();
      expect(json.model.vocab[a!]!).toBeLessThan(ab!);
      expect(json.model.vocab[b!]!).toBeLessThan(ab!);
    }
  });

  it('round-trips ASCII, unicode and code exactly', () => {
    for (const s of samples) {
      const ids = tok.encode(s);
      expect(tok.decode(ids)).toBe(s);
    }
  });

  it('compresses text it was trained on', () => {
    const text = corpus()[1]!;
    expect(tok.encode(text).length).toBeLessThan(new TextEncoder().encode(text).length / 2);
  });

  it('keeps special tokens whole and knows their roles', () => {
    const ids = tok.encode('<|im_start|>user\nhi<|im_end|>');
    expect(ids[0]).toBe(tok.tokenToId('<|im_start|>'));
    expect(ids.at(-1)).toBe(tok.tokenToId('<|im_end|>'));
    expect(tok.eosTokenIds).toEqual([tok.tokenToId('<|im_end|>')]);
    expect(tok.padTokenId).toBe(tok.tokenToId('<|endoftext|>'));
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('user\nhi');
    expect(tok.isSpecial(ids[0]!)).toBe(true);
    expect(tok.isSpecial(ids[1]!)).toBe(false);
    expect(tok.chatTemplate).toBe(CHATML_TEMPLATE);
  });

  it('is deterministic and respects the vocabulary budget', () => {
    const again = trainByteLevelBpe(corpus(), { vocabSize: 700 });
    expect(JSON.stringify(again)).toBe(JSON.stringify(json));
    const small = trainByteLevelBpe(corpus(), { vocabSize: 300 });
    expect(Object.keys(small.model.vocab).length).toBe(300);
    expect(() => trainByteLevelBpe(corpus(), { vocabSize: 100 })).toThrow(/vocabSize/);
  });

  it('loads from a model directory, with generation_config eos ids, and rejects bad files clearly', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tok-'));
    try {
      await writeFile(join(dir, 'tokenizer.json'), JSON.stringify(json));
      await writeFile(join(dir, 'tokenizer_config.json'), JSON.stringify(chatMlTokenizerConfig(CHATML_TEMPLATE)));
      await writeFile(join(dir, 'generation_config.json'), JSON.stringify({ eos_token_id: [0, 2] }));
      const loaded = await TextTokenizer.load(dir);
      expect(loaded.encode(samples[2]!)).toEqual(tok.encode(samples[2]!));
      expect([...loaded.eosTokenIds].sort()).toEqual([0, 2]);
      const raw = await readFile(join(dir, 'tokenizer.json'), 'utf8');
      await writeFile(join(dir, 'tokenizer.json'), raw.slice(0, raw.length / 2));
      await expect(TextTokenizer.load(dir)).rejects.toThrow(/tokenizer\.json .* not valid JSON/);
      await rm(join(dir, 'tokenizer.json'));
      await expect(TextTokenizer.load(dir)).rejects.toThrow(/cannot read tokenizer\.json/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses ids outside the vocabulary', () => {
    expect(() => tok.decode([tok.vocabSize])).toThrow(/outside the vocabulary/);
    expect(tok.decode([])).toBe('');
  });
});
