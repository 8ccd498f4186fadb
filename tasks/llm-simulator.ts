// A simulated collaborator played by an LLM behind any OpenAI-compatible chat-completions endpoint. It sees the
// hidden reference and answers the agent as the person who asked, following ColBench's rules for its simulator:
// only from the hidden information, at most two sentences, "I don't know" otherwise, reply cut to the cap.
import type { ChatMessage, Collaborator } from './agent.ts';
import type { TaskContent } from './model.ts';
import { capCollaboratorReply, parseAgentMessage, ProtocolError } from './protocol.ts';

export interface LlmSimulatorOptions {
  /** Base URL (`http://host/v1`) or the full `/chat/completions` URL. */
  url: string;
  model: string;
  /** Sent as `Authorization: Bearer <key>`; never included in errors. */
  key?: string;
  /** Per request. */
  timeoutMs?: number;
  /** Extra attempts after a 429, a 5xx, a timeout or a network error. */
  retries?: number;
  /** First backoff delay; doubles each retry (a Retry-After header wins when present). */
  backoffMs?: number;
  maxTokens?: number;
  temperature?: number;
  /**
   * Frontend only: renders a page to PNG. When given, the simulator is sent the target's and the latest
   * draft's screenshots as images (for a vision model), as ColBench's frontend simulator sees them;
   * otherwise it gets the target page's HTML as text.
   */
  screenshot?: (html: string) => Promise<Buffer>;
  fetch?: typeof fetch;
}

export class LlmSimulatorError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'LlmSimulatorError';
  }
}

/** Our simulator prompt: the collaborator's part, with the hidden information it may answer from. */
export function simulatorSystemPrompt(task: TaskContent, options: { withImages?: boolean } = {}): string {
  if (task.kind === 'backend') {
    return [
      'You are role-playing a person who asked an AI assistant to write a Python function for them.',
      `What you asked: ${task.description}`,
      'The function you actually have in mind is below. The assistant cannot see it.',
      '<hidden_function>',
      task.reference,
      '</hidden_function>',
      'Rules for every reply:',
      '- Answer the assistant\'s latest message using only what the hidden function shows (values, conditions, order of arguments, return format).',
      '- If the hidden function does not settle the question, say "I don\'t know."',
      '- Write at most two sentences, in plain words, as the person would. Never show or quote code, and never write the function yourself.',
    ].join('\n');
  }
  return [
    'You are role-playing a person who asked an AI assistant to build a web page for them.',
    `What you asked: ${task.description}`,
    options.withImages
      ? 'You are shown a screenshot of the page you have in mind (the first image) and, when the assistant has shown a draft, a screenshot of that draft (the second image). The assistant cannot see your page.'
      : 'The page you have in mind is the HTML below. The assistant cannot see it.\n<hidden_page>\n' + task.reference + '\n</hidden_page>',
    'Rules for every reply:',
    '- Answer the assistant\'s latest message only from what your page shows: layout, colours, text, images, sizes.',
    '- When there is a draft, describe the most important ways it differs from your page.',
    '- If your page does not settle the question, say "I don\'t know."',
    '- Write at most two sentences, as the person would. Never write HTML or code.',
  ].join('\n');
}

function endpoint(url: string): string {
  const trimmed = url.replace(/\/+$/, '');
  return /\/chat\/completions$/.test(trimmed) ? trimmed : `${trimmed}/chat/completions`;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });

type ContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };
type WireMessage = { role: 'system' | 'user' | 'assistant'; content: string | ContentPart[] };

/**
 * The simulator's side of the conversation: the agent's messages become the `user` turns it answers and its own
 * earlier replies the `assistant` turns. The agent's system prompt is not its business and is dropped.
 */
export function simulatorMessages(task: TaskContent, dialogue: ChatMessage[], options: { withImages?: boolean } = {}): WireMessage[] {
  const body = dialogue.filter((m) => m.role !== 'system');
  // body[0] is the task description, which the person wrote themselves: it is in the system prompt.
  const rest = body.slice(1);
  if (rest.length === 0 || rest[rest.length - 1]!.role !== 'assistant') {
    throw new ProtocolError('the simulator answers an agent message: the dialogue must end with one');
  }
  return [
    { role: 'system', content: simulatorSystemPrompt(task, options) },
    ...rest.map((m): WireMessage => ({ role: m.role === 'assistant' ? 'user' : 'assistant', content: m.content })),
  ];
}

export function createLlmCollaborator(task: TaskContent, options: LlmSimulatorOptions): Collaborator {
  const doFetch = options.fetch ?? fetch;
  const url = endpoint(options.url);
  const timeoutMs = options.timeoutMs ?? 60_000;
  const retries = options.retries ?? 3;
  const backoffMs = options.backoffMs ?? 1000;
  const withImages = task.kind === 'frontend' && options.screenshot !== undefined;
  let targetImage: string | undefined;

  async function wireMessages(dialogue: ChatMessage[]): Promise<WireMessage[]> {
    const messages = simulatorMessages(task, dialogue, { withImages });
    if (!withImages || !options.screenshot) return messages;
    targetImage ??= `data:image/png;base64,${(await options.screenshot(task.reference)).toString('base64')}`;
    const agentTurns = dialogue.filter((m) => m.role === 'assistant');
    const latest = agentTurns[agentTurns.length - 1]!;
    // Asked as a non-final turn, so a page after OUTPUT: reads as a draft (the game's end is not decided here).
    const parsed = parseAgentMessage(latest.content, { kind: 'frontend', turnIndex: 0, maxTurns: 2 });
    const parts: ContentPart[] = [{ type: 'text', text: parsed.type === 'draft' ? parsed.text || 'Here is my draft.' : latest.content }];
    parts.push({ type: 'image_url', image_url: { url: targetImage } });
    if (parsed.type === 'draft' && parsed.html) {
      const draft = await options.screenshot(parsed.html);
      parts.push({ type: 'image_url', image_url: { url: `data:image/png;base64,${draft.toString('base64')}` } });
    }
    messages[messages.length - 1] = { role: 'user', content: parts };
    return messages;
  }

  return {
    name: `llm:${options.model}`,
    async reply(dialogue, callOptions) {
      const body = JSON.stringify({
        model: options.model,
        messages: await wireMessages(dialogue),
        max_tokens: options.maxTokens ?? 256,
        temperature: options.temperature ?? 0,
      });
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (options.key) headers.authorization = `Bearer ${options.key}`;

      let lastError: LlmSimulatorError | undefined;
      for (let attempt = 0; attempt <= retries; attempt++) {
        callOptions?.signal?.throwIfAborted();
        const signals = [AbortSignal.timeout(timeoutMs)];
        if (callOptions?.signal) signals.push(callOptions.signal);
        let response: Response;
        try {
          response = await doFetch(url, { method: 'POST', headers, body, signal: AbortSignal.any(signals) });
        } catch (err) {
          if (callOptions?.signal?.aborted) throw err;
          const e = err as Error;
          lastError = new LlmSimulatorError(
            e.name === 'TimeoutError' ? `simulator LLM at ${url} did not answer within ${timeoutMs} ms` : `simulator LLM at ${url} unreachable: ${e.message}`,
          );
          if (attempt < retries) await sleep(backoffMs * 2 ** attempt, callOptions?.signal);
          continue;
        }
        if (response.status === 429 || response.status >= 500) {
          const detail = (await response.text().catch(() => '')).slice(0, 200);
          lastError = new LlmSimulatorError(`simulator LLM at ${url} answered HTTP ${response.status}${detail ? `: ${detail}` : ''}`, response.status);
          if (attempt < retries) {
            const retryAfter = Number(response.headers.get('retry-after'));
            const wait = Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter * 1000, 60_000) : backoffMs * 2 ** attempt;
            await sleep(wait, callOptions?.signal);
          }
          continue;
        }
        const raw = await response.text();
        if (!response.ok) {
          throw new LlmSimulatorError(`simulator LLM at ${url} refused the request: HTTP ${response.status}: ${raw.slice(0, 300)}`, response.status);
        }
        let content: unknown;
        try {
          content = (JSON.parse(raw) as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]?.message?.content;
        } catch {
          throw new LlmSimulatorError(`simulator LLM at ${url} returned something that is not JSON: ${raw.slice(0, 200)}`);
        }
        if (typeof content !== 'string') {
          throw new LlmSimulatorError(`simulator LLM at ${url} returned no choices[0].message.content: ${raw.slice(0, 200)}`);
        }
        return capCollaboratorReply(content, task.kind);
      }
      throw new LlmSimulatorError(`${lastError?.message ?? 'simulator LLM failed'} (gave up after ${retries + 1} attempts)`, lastError?.status);
    },
  };
}
