// Chat formatting from the model's own Jinja chat template (tokenizer_config.json `chat_template`), rendered
// with @huggingface/jinja the way transformers' apply_chat_template does. Models without a template (and the
// starter policy) use ChatML.
import { Template } from '@huggingface/jinja';
import type { ChatMessage } from '../../tasks/agent.ts';
import type { TextTokenizer } from './tokenizer.ts';

/** ChatML as Qwen2 and SmolLM2 use it, without an implicit default system message. */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

export interface ChatSpecialTokens {
  bos_token?: string;
  eos_token?: string;
  pad_token?: string;
  unk_token?: string;
}

/** A piece of a rendered dialogue; `train` marks the assistant's own tokens (what SFT learns). */
export interface ChatSegment {
  text: string;
  train: boolean;
}

export class ChatFormatter {
  private readonly template: Template;

  constructor(
    readonly source: string,
    private readonly specials: ChatSpecialTokens = {},
  ) {
    try {
      this.template = new Template(source);
    } catch (err) {
      throw new Error(`chat template does not parse: ${(err as Error).message}`);
    }
  }

  /** The tokenizer's template, or `fallback` (ChatML) when the model ships none. */
  static fromTokenizer(tok: TextTokenizer, fallback: string = CHATML_TEMPLATE): ChatFormatter {
    const specials: ChatSpecialTokens = {};
    if (tok.bosToken !== undefined) specials.bos_token = tok.bosToken;
    if (tok.eosToken !== undefined) specials.eos_token = tok.eosToken;
    if (tok.padToken !== undefined) specials.pad_token = tok.padToken;
    return new ChatFormatter(tok.chatTemplate ?? fallback, specials);
  }

  format(messages: readonly ChatMessage[], options: { addGenerationPrompt?: boolean } = {}): string {
    try {
      return this.template.render({
        messages: messages.map((m) => ({ role: m.role, content: m.content })),
        add_generation_prompt: options.addGenerationPrompt ?? false,
        ...this.specials,
      });
    } catch (err) {
      throw new Error(`chat template failed to render: ${(err as Error).message}`);
    }
  }

  /**
   * The full rendering of `messages` cut into pieces, each assistant message (with its end-of-turn marker)
   * marked trainable. Found by rendering the dialogue up to each assistant turn with the generation prompt:
   * what the full rendering adds after that prefix is exactly what the model must produce at that turn.
   * Templates that rewrite earlier turns (so a prefix is not a prefix) are refused.
   */
  segments(messages: readonly ChatMessage[]): ChatSegment[] {
    const full = this.format(messages);
    const out: ChatSegment[] = [];
    let cursor = 0;
    for (let i = 0; i < messages.length; i++) {
      if (messages[i]!.role !== 'assistant') continue;
      const prompt = this.format(messages.slice(0, i), { addGenerationPrompt: true });
      const upto = this.format(messages.slice(0, i + 1));
      if (!full.startsWith(prompt) || !full.startsWith(upto) || prompt.length < cursor || !upto.startsWith(prompt)) {
        throw new Error('chat template is not prefix-consistent: cannot find where assistant turns start and end');
      }
      if (prompt.length > cursor) out.push({ text: full.slice(cursor, prompt.length), train: false });
      out.push({ text: full.slice(prompt.length, upto.length), train: true });
      cursor = upto.length;
    }
    if (cursor < full.length) out.push({ text: full.slice(cursor), train: false });
    return out;
  }
}
