// The deployed policy as an Agent: a checkpoint served by the inference worker, prompted with the dialogue the
// protocol builds (system prompt, task description, alternating turns) rendered by the model's chat template.
import type { Agent, AgentReply, ChatMessage } from '../../tasks/agent.ts';
import type { BackendChoice } from './backend.ts';
import { InferenceClient } from './inference.ts';
import type { WorkerInfo } from './inference.ts';

export interface PolicyAgentOptions {
  /** Hugging Face model directory to serve (ignored when `client` is given). */
  checkpointDir?: string;
  /** Share an already started worker instead of starting one; `close()` then leaves it running. */
  client?: InferenceClient;
  backend?: BackendChoice;
  name?: string;
  /** Default 0.7: a collaborator-facing agent should not ramble; rollouts for training may want 1. */
  temperature?: number;
  /** Default 0.95. */
  topP?: number;
  /** Default 1024 tokens (a backend answer; frontend pages may want more). The context limit also applies. */
  maxTokens?: number;
  /** With a seed, reply k samples with seed + k: a whole game is reproducible. */
  seed?: number;
}

export interface PolicyAgent extends Agent {
  readonly client: InferenceClient;
  /** Serves another checkpoint from the next reply on (a deploy or rollback). */
  reload(checkpointDir: string): Promise<WorkerInfo>;
  close(): Promise<void>;
}

export async function createPolicyAgent(options: PolicyAgentOptions): Promise<PolicyAgent> {
  let client = options.client;
  const owned = !client;
  if (!client) {
    if (!options.checkpointDir) throw new Error('createPolicyAgent: give checkpointDir or client');
    client = await InferenceClient.start({ checkpointDir: options.checkpointDir, ...(options.backend ? { backend: options.backend } : {}) });
  }
  const c = client;
  const temperature = options.temperature ?? 0.7;
  const topP = options.topP ?? 0.95;
  const maxTokens = options.maxTokens ?? 1024;
  let calls = 0;

  return {
    name: options.name ?? 'policy',
    client: c,
    async reply(dialogue: ChatMessage[], opts?: { signal?: AbortSignal }): Promise<AgentReply> {
      const seed = options.seed !== undefined ? options.seed + calls : undefined;
      calls++;
      const [r] = await c.generate(
        [{ messages: dialogue }],
        { temperature, topP, maxTokens, ...(seed !== undefined ? { seed } : {}) },
        opts?.signal,
      );
      return { text: r!.text, promptTokens: r!.promptTokens, completionTokens: r!.tokenIds.length };
    },
    reload: (dir: string) => c.reload(dir),
    async close() {
      if (owned) await c.close();
    },
  };
}
