// A foreign GGUF model (its own byte-level BPE vocabulary and a non-ChatML chat template in its metadata, written by
// the project's GGUF writer from a scratch directory that is then deleted) served by the llama.cpp engine: the
// prompt that reaches llama.cpp is the file's template rendered and tokenized by the file's vocabulary (checked
// against a hand-written rendering and an independent tokenizer), the reply ends on the file's end-of-turn token,
// and a malformed file is refused with the fault named, before llama.cpp could abort the process.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeForeignGguf, renderForeign, type ForeignGguf } from '../../../testing/tiny-checkpoint.ts';
import { TextTokenizer } from '../../../trainer/model/tokenizer.ts';
import type { EngineRequest } from '../../../trainer/serve/engine-contract.ts';
import { inspectForeignGguf } from '../../../trainer/serve/gguf-foreign.ts';
import { GgufValidationError } from '../../../trainer/serve/gguf-validate.ts';
import { LlamaCppEngine } from '../../../trainer/serve/llama-engine.ts';

const DIALOGUE = [
  { role: 'system' as const, content: 'You are a programming assistant.' },
  { role: 'user' as const, content: 'Write a function that returns the BMI.' },
  { role: 'assistant' as const, content: 'In which units are weight and height given?' },
  { role: 'user' as const, content: 'Kilograms and metres.' },
];

function request(over: Partial<EngineRequest> = {}): EngineRequest {
  return {
    messages: DIALOGUE,
    maxTokens: 24,
    temperature: 0,
    topP: 1,
    logprobs: false,
    topLogprobs: 0,
    adapter: null,
    signal: new AbortController().signal,
    ...over,
  };
}

let work: string;
let foreign: ForeignGguf;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'sweetloop-foreign-'));
  foreign = await makeForeignGguf(join(work, 'foreign-tiny-f16.gguf'));
}, 120_000);
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('a foreign GGUF model', () => {
  it('is summarised for provenance: sha256, quantization, architecture, window, its own name', async () => {
    const info = await inspectForeignGguf(foreign.file);
    expect(info).toMatchObject({
      file: foreign.file,
      quantization: 'F16',
      architecture: 'llama',
      modelName: 'Foreign-Tiny-Instruct',
      contextLength: 8192,
    });
    expect(info.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it("reaches llama.cpp rendered with the file's chat template and tokenized by the file's vocabulary", async () => {
    const prompts: number[][] = [];
    const { engine, info } = await LlamaCppEngine.startGguf({
      modelName: 'foreign',
      ggufPath: foreign.file,
      maxBatch: 2,
      maxQueue: 2,
      onPrompt: (ids) => prompts.push([...ids]),
    });
    try {
      const stream = engine.generate(request());
      let text = '';
      for await (const t of stream) text += t.text;
      const result = await stream.result;
      // What the file's template makes of the dialogue, written out by hand, tokenized by an independent
      // implementation of the same vocabulary (Hugging Face tokenizers over the tokenizer.json the file was made from).
      const independent = new TextTokenizer({
        tokenizerJson: foreign.tokenizerJson,
        tokenizerConfig: { eos_token: '<|end|>', clean_up_tokenization_spaces: false },
      });
      const want = independent.encode(renderForeign(DIALOGUE));
      expect(prompts).toEqual([want]);
      expect(result.promptTokens).toBe(want.length);
      // Special tokens of the file are single tokens: BOS first, each role marker one id.
      const vocab = (foreign.tokenizerJson.model as { vocab: Record<string, number> }).vocab;
      expect(want[0]).toBe(vocab['<s>']);
      expect(want.filter((id) => id === vocab['<|user|>'])).toHaveLength(2);
      expect(engine.countPromptTokens(DIALOGUE)).toBe(want.length);
      expect(result.completionTokens).toBeGreaterThan(0);
      expect(text).not.toContain('<|end|>');
      expect(info.quantization).toBe('F16');
      // The starter's ChatML is not what it got.
      expect(independent.decode(prompts[0]!)).not.toContain('<|im_start|>');
    } finally {
      await engine.close();
    }
  });

  it('refuses a malformed file with the fault named (llama.cpp would abort the whole process on it)', async () => {
    const bad = await makeForeignGguf(join(work, 'no-heads.gguf'), {
      metadata: { drop: ['llama.attention.head_count'] },
    });
    await expect(
      LlamaCppEngine.startGguf({ modelName: 'bad', ggufPath: bad.file, maxBatch: 1, maxQueue: 0 }),
    ).rejects.toThrow(/required key llama\.attention\.head_count is missing/);
    await expect(inspectForeignGguf(bad.file)).rejects.toBeInstanceOf(GgufValidationError);
    const noTemplate = await makeForeignGguf(join(work, 'no-template.gguf'), {
      metadata: { drop: ['tokenizer.chat_template'] },
    });
    await expect(inspectForeignGguf(noTemplate.file)).rejects.toThrow(/no tokenizer\.chat_template/);
  });
});
