// Which chat template renders the `input` of a sweet-rl export: the full prompt string the agent saw, as
// transformers' apply_chat_template(messages, add_generation_prompt=True) writes it. The reference pipeline
// (facebookresearch/sweet_rl) was built around Llama-3.1-8B-Instruct and finds assistant turns by its header
// markers, so `llama3` is the default; `chatml` is what the starter policy and Qwen-style models use; any other
// value is the path of a model's tokenizer_config.json under the project folder (the working directory), whose own
// template (and BOS/EOS strings) is used. A request can come from a moderator on Discord: no file outside the
// project is read, and no error quotes a file's contents.
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ChatFormatter, CHATML_TEMPLATE } from '../../trainer/model/chat.ts';
import { isInside } from '../paths.ts';

/**
 * Llama-3.1 Instruct's rendering of a plain dialogue (no tools), written for Sweetloop: the BOS, a system block
 * that opens with the knowledge-cutoff and date lines (date fixed as the model card's template does when no
 * date is given), the system message trimmed, then each message trimmed between its header and <|eot_id|>.
 * For tool-calling prompts, pass the model's own tokenizer_config.json instead.
 */
export const LLAMA3_TEMPLATE =
  '{{- bos_token }}' +
  "{%- if not date_string is defined %}{%- set date_string = '26 Jul 2024' %}{%- endif %}" +
  "{%- if messages[0]['role'] == 'system' %}" +
  "{%- set system_message = messages[0]['content'] | trim %}{%- set rest = messages[1:] %}" +
  "{%- else %}{%- set system_message = '' %}{%- set rest = messages %}{%- endif %}" +
  "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}" +
  "{{- 'Cutting Knowledge Date: December 2023\\n' }}" +
  "{{- 'Today Date: ' + date_string + '\\n\\n' }}" +
  "{{- system_message + '<|eot_id|>' }}" +
  '{%- for message in rest %}' +
  "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + (message['content'] | trim) + '<|eot_id|>' }}" +
  '{%- endfor %}' +
  "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}";

export const BUILTIN_CHAT_TEMPLATES = ['llama3', 'chatml'] as const;

export interface ResolvedChatTemplate {
  /** 'llama3', 'chatml', or the tokenizer_config.json path it came from. */
  name: string;
  formatter: ChatFormatter;
}

export class ChatTemplateError extends Error {}

function tokenString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string')
    return (v as { content: string }).content;
  return undefined;
}

/** A tokenizer_config.json is a few hundred KiB at most; a larger file is not one. */
const MAX_CONFIG_BYTES = 8 * 1024 * 1024;

/** The file `spec` names, if it is a regular file under `root` once links are followed; else a ChatTemplateError. */
function projectFile(spec: string, root: string): string {
  const base = realpathSync(resolve(root));
  let file: string;
  try {
    file = realpathSync(resolve(base, spec));
  } catch {
    throw new ChatTemplateError(
      `--chat-template: "${spec}" is neither ${BUILTIN_CHAT_TEMPLATES.join(' nor ')} nor a tokenizer_config.json under ${base}`,
    );
  }
  if (!isInside(file, base))
    throw new ChatTemplateError(
      `--chat-template: "${spec}" is outside the project folder ${base}: give ${BUILTIN_CHAT_TEMPLATES.join(', ')} or a tokenizer_config.json under it`,
    );
  const st = statSync(file);
  if (!st.isFile()) throw new ChatTemplateError(`--chat-template: "${spec}" is not a file`);
  if (st.size > MAX_CONFIG_BYTES)
    throw new ChatTemplateError(
      `--chat-template: "${spec}" is larger than ${MAX_CONFIG_BYTES / 2 ** 20} MiB: not a tokenizer_config.json`,
    );
  return file;
}

/**
 * `llama3`, `chatml`, or the path of a tokenizer_config.json with a `chat_template` under `root` (default: the
 * working directory, the project the command runs in).
 */
export function resolveChatTemplate(spec: string, o: { root?: string } = {}): ResolvedChatTemplate {
  if (spec === 'llama3')
    return {
      name: 'llama3',
      formatter: new ChatFormatter(LLAMA3_TEMPLATE, { bos_token: '<|begin_of_text|>', eos_token: '<|eot_id|>' }),
    };
  if (spec === 'chatml') return { name: 'chatml', formatter: new ChatFormatter(CHATML_TEMPLATE) };
  const file = projectFile(spec, o.root ?? process.cwd());
  let config: unknown;
  try {
    config = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    // JSON.parse's message quotes the text around the error: never repeated.
    throw new ChatTemplateError(`--chat-template: "${spec}" is not valid JSON, so not a tokenizer_config.json`);
  }
  if (!config || typeof config !== 'object' || Array.isArray(config))
    throw new ChatTemplateError(`--chat-template: "${spec}" is not a JSON object, so not a tokenizer_config.json`);
  const tpl = (config as Record<string, unknown>).chat_template;
  let source: string | undefined;
  if (typeof tpl === 'string') source = tpl;
  else if (Array.isArray(tpl)) {
    // Files with several named templates: apply_chat_template uses the one named "default".
    const named = tpl as { name?: string; template?: string }[];
    source = (named.find((t) => t.name === 'default') ?? named[0])?.template;
  }
  if (typeof source !== 'string' || !source)
    throw new ChatTemplateError(`--chat-template: ${spec} has no chat_template`);
  const specials: Record<string, string> = {};
  for (const k of ['bos_token', 'eos_token', 'pad_token', 'unk_token'] as const) {
    const v = tokenString((config as Record<string, unknown>)[k]);
    if (v !== undefined) specials[k] = v;
  }
  try {
    return { name: spec, formatter: new ChatFormatter(source, specials) };
  } catch {
    // The template parser's message quotes the template: not repeated either.
    throw new ChatTemplateError(
      `--chat-template: ${spec}: its chat_template is not a Jinja template this exporter can render`,
    );
  }
}
