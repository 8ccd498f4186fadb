// Fitting a dialogue into a model's window (the context budget): apart from tasks/protocol.ts, which sets the rules.
import type { ChatMessage } from './agent.ts';

/** The dialogue a policy is actually sent, after the context budget. */
export interface FittedDialogue {
  messages: ChatMessage[];
  /** Dialogue turns (agent and human messages) left out, oldest first; always an even number. */
  droppedTurns: number;
  /** Tokens of `messages` by the counter given. */
  tokens: number;
  /** False when even the system prompt, the task and nothing else exceed the budget (the window is too small). */
  fits: boolean;
}

/**
 * Fits a dialogue as buildDialogue makes it (system prompt, task description, then agent/human turns) into
 * `budget` tokens, the model's window minus what its reply may use. The system prompt, the task and the latest
 * turns are kept; the oldest turns after the task are dropped two at a time (an agent message with the human
 * reply to it), so roles still alternate and the dialogue still starts with the agent's first kept message.
 * When the latest exchange alone is too long, it goes too: the agent then answers from the task alone, which
 * beats ending the session. `countTokens` counts a whole message list as the model will see it (chat template
 * included); it is called O(log turns) times.
 */
export function fitDialogue(
  dialogue: readonly ChatMessage[],
  budget: number,
  countTokens: (messages: readonly ChatMessage[]) => number,
): FittedDialogue {
  // The head: leading system messages and the task description (the first user message).
  let head = 0;
  while (head < dialogue.length && dialogue[head]!.role === 'system') head++;
  if (head < dialogue.length && dialogue[head]!.role === 'user') head++;
  const turns = dialogue.slice(head);
  const withDropped = (pairs: number): ChatMessage[] => [
    ...dialogue.slice(0, head),
    ...turns.slice(Math.min(turns.length, pairs * 2)),
  ];

  const all = countTokens(dialogue);
  if (all <= budget) return { messages: [...dialogue], droppedTurns: 0, tokens: all, fits: true };
  // Fewest pairs to drop such that the rest fits (what remains shrinks as more is dropped: binary search).
  const maxPairs = Math.ceil(turns.length / 2);
  let lo = 1;
  let hi = maxPairs;
  let best: { pairs: number; tokens: number } | null = null;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const tokens = countTokens(withDropped(mid));
    if (tokens <= budget) {
      best = { pairs: mid, tokens };
      hi = mid - 1;
    } else lo = mid + 1;
  }
  if (best)
    return {
      messages: withDropped(best.pairs),
      droppedTurns: Math.min(turns.length, best.pairs * 2),
      tokens: best.tokens,
      fits: true,
    };
  const headOnly = withDropped(maxPairs);
  return { messages: headOnly, droppedTurns: turns.length, tokens: countTokens(headOnly), fits: false };
}

/**
 * A token count for when the model's tokenizer is not at hand (an endpoint without --base-model-dir): one token
 * per 3 characters plus 8 per message for the chat template's markers. Deliberately pessimistic: Llama-3 and
 * Qwen tokenizers average about 4 characters a token on English and 3-3.5 on code, so this overcounts and the
 * prompt fits; the cost is dropping old turns a little earlier than needed.
 */
export function estimateTokens(messages: readonly ChatMessage[]): number {
  return messages.reduce((n, m) => n + Math.ceil(m.content.length / 3) + 8, 0);
}
