// The agents that play sessions: loaded once per policy version and cached, waited for while their server is
// unavailable, and closed once their version is retired and no active session still uses it.
import { AgentUnavailableError, type Agent, type AgentReply } from '../../tasks/agent.ts';
import type { buildDialogue } from '../../tasks/protocol.ts';
import type { PolicyVersion } from '../../prisma/generated/client.ts';
import type { EngineContext } from './context.ts';
import type { Hooks } from './types.ts';

export class AgentCache {
  private readonly agents = new Map<string, Promise<Agent>>();
  /** Sessions whose turn waits for its agent's server: the wait holds the session's lock until it ends. */
  private readonly waiting = new Set<string>();

  constructor(private readonly ctx: EngineContext) {}

  agentFor(policy: PolicyVersion): Promise<Agent> {
    let a = this.agents.get(policy.id);
    if (!a) {
      a = this.ctx.deps.loadAgent(policy);
      a.catch(() => this.agents.delete(policy.id));
      this.agents.set(policy.id, a);
    }
    return a;
  }

  /** Is this session's turn waiting for its agent's server to come back? */
  waitingForAgent(sessionId: string): boolean {
    return this.waiting.has(sessionId);
  }

  /**
   * The agent's reply, waiting out an unavailable server: the person is told once, and the same dialogue is
   * sent again with back-off until the server answers. Null when the session stopped being active (or the
   * engine closed) meanwhile; nothing has been stored then.
   */
  async replyWhenAvailable(agent: Agent, dialogue: ReturnType<typeof buildDialogue>, sessionId: string, hooks?: Hooks): Promise<AgentReply | null> {
    const { ctx } = this;
    const { initial, max } = ctx.options.agentRetryMs ?? { initial: 2_000, max: 30_000 };
    let delay = initial;
    let waited = false;
    for (;;) {
      try {
        const reply = await agent.reply(dialogue);
        this.waiting.delete(sessionId);
        if (waited) await Promise.resolve(hooks?.onAgentRecovered?.()).catch(() => {});
        return reply;
      } catch (err) {
        if (!(err instanceof AgentUnavailableError) || ctx.closing) throw err;
        if (!waited) {
          waited = true;
          this.waiting.add(sessionId);
          ctx.deps.log?.warn({ session: sessionId, err: err.message }, 'agent unavailable; the session waits');
          await Promise.resolve(hooks?.onAgentWaiting?.()).catch(() => {});
        }
        await new Promise((r) => setTimeout(r, Math.max(delay, err.retryAfterMs ?? 0)));
        delay = Math.min(delay * 2, max);
        const still = await ctx.retry(() => ctx.prisma.session.findUnique({ where: { id: sessionId }, select: { status: true } }), hooks);
        if (still?.status !== 'active' || ctx.closing) {
          this.waiting.delete(sessionId);
          return null;
        }
      }
    }
  }

  /**
   * Closes the agents of versions no longer deployed that no active session still uses (an adapter agent
   * unloads its adapter from the server then). Called on every deploy.
   */
  async evictRetired(): Promise<string[]> {
    const { ctx } = this;
    const deployedId = ctx.deps.policies.deployed?.id;
    const evicted: string[] = [];
    for (const [policyId, a] of [...this.agents]) {
      if (policyId === deployedId) continue;
      const inUse = await ctx.retry(() => ctx.prisma.session.count({ where: { policyVersionId: policyId, status: 'active' } }));
      if (inUse > 0) continue;
      this.agents.delete(policyId);
      await closeAgent(a);
      evicted.push(policyId);
    }
    if (evicted.length) ctx.deps.log?.info({ evicted }, 'closed agents of retired policy versions');
    return evicted;
  }

  async closeAll(): Promise<void> {
    for (const a of this.agents.values()) await closeAgent(a);
    this.agents.clear();
  }
}

async function closeAgent(a: Promise<Agent>): Promise<void> {
  const agent = await a.catch(() => null);
  const closable = agent as unknown as { close?: () => Promise<void> | void } | null;
  await Promise.resolve(closable?.close?.()).catch(() => {});
}
