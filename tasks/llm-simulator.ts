// A simulated collaborator played by an LLM behind any OpenAI-compatible chat-completions endpoint. It sees the
// hidden reference and answers the agent as the person who asked, following ColBench's rules for its simulator:
// only from the hidden information, at most two sentences, "I don't know" otherwise, reply cut to the cap.
// Requests go through tasks/chat-client.ts (timeouts, retries, in-flight cap, key handling).
import type { ChatMessage, Collaborator } from './agent.ts';
import type { TaskContent } from './model.ts';
import { capCollaboratorReply, parseAgentMessage, ProtocolError } from './protocol.ts';
import { chatCompletion, type ContentPart, type WireMessage } from './chat-client.ts';
import { EndpointRequestError, EndpointUnavailableError } from './chat-endpoint.ts';

export interface LlmSimulatorOptions {
  /** Base URL (`http://host/v1`) or the full `/chat/completions` URL. */
  url: string;
  model: string;
  /** Sent as `Authorization: Bearer <key>`; never included in errors or logs. */
  key?: string;
  /** For the whole reply, retries included (default 60 s). */
  timeoutMs?: number;
  /** Extra attempts after a 429, a 5xx, a dropped connection or a refused one (default 3). */
  retries?: number;
  /** Base of the backoff for a reply cut mid-way (the client's own retries of a failed request use the SDK's). */
  backoffMs?: number;
  maxTokens?: number;
  temperature?: number;
  /**
   * Frontend only: renders a page to PNG. When given, the simulator is sent the target's and the latest
   * draft's screenshots as images (for a vision model), as ColBench's frontend simulator sees them;
   * otherwise it gets the target page's HTML as text.
   */
  screenshot?: (html: string) => Promise<Buffer>;
}

/**
 * The simulator's endpoint failed. `unavailable`: it stayed down, overloaded or too slow through the retries
 * (the game can be tried again later); otherwise it refused the request or answered nonsense.
 */
export class LlmSimulatorError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly unavailable = false,
    readonly retryAfterMs?: number,
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
      "- Answer the assistant's latest message using only what the hidden function shows (values, conditions, order of arguments, return format).",
      '- If the hidden function does not settle the question, say "I don\'t know."',
      '- Write at most two sentences, in plain words, as the person would. Never show or quote code, and never write the function yourself.',
    ].join('\n');
  }
  return [
    'You are role-playing a person who asked an AI assistant to build a web page for them.',
    `What you asked: ${task.description}`,
    options.withImages
      ? 'You are shown a screenshot of the page you have in mind (the first image) and, when the assistant has shown a draft, a screenshot of that draft (the second image). The assistant cannot see your page.'
      : 'The page you have in mind is the HTML below. The assistant cannot see it.\n<hidden_page>\n' +
        task.reference +
        '\n</hidden_page>',
    'Rules for every reply:',
    "- Answer the assistant's latest message only from what your page shows: layout, colours, text, images, sizes.",
    '- When there is a draft, describe the most important ways it differs from your page.',
    '- If your page does not settle the question, say "I don\'t know."',
    '- Write at most two sentences, as the person would. Never write HTML or code.',
  ].join('\n');
}

/**
 * The simulator's side of the conversation: the agent's messages become the `user` turns it answers and its own
 * earlier replies the `assistant` turns. The agent's system prompt is not its business and is dropped.
 */
export function simulatorMessages(
  task: TaskContent,
  dialogue: ChatMessage[],
  options: { withImages?: boolean } = {},
): WireMessage[] {
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
    const parts: ContentPart[] = [
      { type: 'text', text: parsed.type === 'draft' ? parsed.text || 'Here is my draft.' : latest.content },
    ];
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
      const messages = await wireMessages(dialogue);
      try {
        const r = await chatCompletion(
          { url: options.url, apiKey: options.key },
          {
            model: options.model,
            messages,
            maxTokens: options.maxTokens ?? 256,
            temperature: options.temperature ?? 0,
            stream: false,
            signal: callOptions?.signal,
          },
          {
            totalTimeoutMs: options.timeoutMs ?? 60_000,
            maxRetries: options.retries ?? 3,
            ...(options.backoffMs !== undefined ? { backoffMs: options.backoffMs } : {}),
          },
        );
        return capCollaboratorReply(r.text, task.kind);
      } catch (err) {
        if (err instanceof EndpointUnavailableError)
          throw new LlmSimulatorError(`simulator LLM: ${err.message}`, err.status, true, err.retryAfterMs);
        if (err instanceof EndpointRequestError)
          throw new LlmSimulatorError(`simulator LLM: ${err.message}`, err.status);
        throw err;
      }
    },
  };
}
