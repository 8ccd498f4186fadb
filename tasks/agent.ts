// What it means to be an agent or a collaborator in a ColBench game, independent of who plays:
// the deployed policy, a scripted expert, a person on Discord, a simulator.

/** One message of the dialogue in chat-model terms: the agent is the `assistant`, the collaborator the `user`. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface AgentReply {
  /** The agent's full message, exactly as produced. */
  text: string;
  promptTokens?: number;
  completionTokens?: number;
}

/**
 * An agent answers the dialogue so far. `dialogue` starts with the system prompt and the task description
 * (as the protocol builds them) and alternates assistant/user after that.
 */
export interface Agent {
  readonly name: string;
  reply(dialogue: ChatMessage[], options?: { signal?: AbortSignal }): Promise<AgentReply>;
}

/** A collaborator answers the agent's latest message, knowing the hidden reference. */
export interface Collaborator {
  readonly name: string;
  reply(dialogue: ChatMessage[], options?: { signal?: AbortSignal }): Promise<string>;
}
