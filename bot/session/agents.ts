// The agents that play sessions: loaded once per policy version and cached, waited for (with a deadline after
// which the person is told) while their server is unavailable or silent, and closed once their version is
// retired and no active session still uses it.
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

  /** The agent of a version known by id: its row is read only while no agent of that version is loaded. */
  async agentOf(policyVersionId: string, hooks?: Hooks): Promise<Agent> {
    const loaded = this.agents.get(policyVersionId);
    if (loaded) return loaded;
    const policy = await this.ctx.retry(
      () => this.ctx.prisma.policyVersion.findUniqueOrThrow({ where: { id: policyVersionId } }),
      hooks,
    );
    return this.agentFor(policy);
  }

  /** Is this session's turn waiting for its agent's server to come back? */
  waitingForAgent(sessionId: string): boolean {
    return this.waiting.has(sessionId);
  }

  /**
   * The agent's reply (the agent loaded first), waiting out an unavailable or silent server: when it fails as
   * unavailable, cannot be loaded, or has not answered within agentWaitMs, the person is told once; a failed try
   * is sent again with back-off, a silent one given more time, for as long as the session is active. Null when it
   * stopped being active (stopped, expired) or the engine closed meanwhile; nothing has been stored then.
   */
  async replyWhenAvailable(
    agent: () => Promise<Agent>,
    dialogue: ReturnType<typeof buildDialogue>,
    sessionId: string,
    hooks?: Hooks,
  ): Promise<AgentReply | null> {
    const { ctx } = this;
    const log = ctx.deps.log;
    const { initial, max } = ctx.options.agentRetryMs ?? { initial: 2_000, max: 30_000 };
    const patience = ctx.options.agentWaitMs ?? 120_000;
    const t0 = performance.now();
    let delay = initial;
    let waited = false;
    let tries = 0;
    let abort: AbortController | null = null;
    const unavailable = async (why: string) => {
      if (waited) return;
      waited = true;
      this.waiting.add(sessionId);
      log?.warn({ session: sessionId, err: why }, 'agent unavailable; the session waits');
      await Promise.resolve(hooks?.onAgentWaiting?.()).catch(() => {});
    };
    /** Why the wait ends without a reply (the session is no longer active, the engine closes), or null. */
    const gone = async (): Promise<string | null> => {
      const still = await ctx.retry(
        () => ctx.prisma.session.findUnique({ where: { id: sessionId }, select: { status: true } }),
        hooks,
      );
      if (ctx.closing) return 'the engine closes';
      return still?.status === 'active' ? null : `the session is ${still?.status ?? 'deleted'}`;
    };
    const abandon = (why: string) => {
      log?.warn({ session: sessionId, why, tries, ms: Math.round(performance.now() - t0) }, 'agent request abandoned');
      return null;
    };
    try {
      for (;;) {
        const signal = (abort = new AbortController()).signal;
        tries++;
        log?.debug({ session: sessionId, try: tries }, 'agent request sent');
        const attempt = agent().then(
          (a) => a.reply(dialogue, { signal }),
          (err: unknown) => {
            throw err instanceof AgentUnavailableError
              ? err
              : new AgentUnavailableError(`the agent cannot be loaded: ${(err as Error).message}`);
          },
        );
        try {
          while (!(await settlesWithin(attempt, patience))) {
            if (waited)
              log?.debug(
                { session: sessionId, try: tries, waitedMs: Math.round(performance.now() - t0) },
                'agent still silent',
              );
            await unavailable(`no answer within ${patience} ms`);
            const why = await gone();
            if (why) return abandon(why);
          }
          const reply = await attempt;
          // The engine sees the first token only through the reply's provenance, so it is logged with the reply.
          const firstTokenMs = reply.provenance?.firstTokenMs ?? null;
          if (firstTokenMs !== null)
            log?.debug({ session: sessionId, try: tries, firstTokenMs: Math.round(firstTokenMs) }, 'agent first token');
          log?.debug({ session: sessionId, try: tries, ms: Math.round(performance.now() - t0) }, 'agent reply done');
          if (waited) {
            // Stopped or expired while it waited: its late reply is not stored.
            const why = await gone();
            if (why) return abandon(`${why} (a late reply is not stored)`);
            await Promise.resolve(hooks?.onAgentRecovered?.()).catch(() => {});
          }
          return reply;
        } catch (err) {
          if (!(err instanceof AgentUnavailableError)) throw err;
          // Closing: the session is kept as it is (the next start resumes it), not ended for an agent error.
          if (ctx.closing) return abandon('the engine closes');
          await unavailable(err.message);
          const wait = Math.max(delay, err.retryAfterMs ?? 0);
          log?.debug({ session: sessionId, try: tries, inMs: wait, err: err.message }, 'agent request retried');
          await new Promise((r) => setTimeout(r, wait));
          delay = Math.min(delay * 2, max);
          const why = await gone();
          if (why) return abandon(why);
        }
      }
    } finally {
      abort?.abort(); // a reply still running for a session that ended is not waited for
      this.waiting.delete(sessionId);
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
      const inUse = await ctx.retry(() =>
        ctx.prisma.session.count({ where: { policyVersionId: policyId, status: 'active' } }),
      );
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

/** Whether `p` settles (either way) within `ms`. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function closeAgent(a: Promise<Agent>): Promise<void> {
  const agent = await a.catch(() => null);
  const closable = agent as unknown as { close?: () => Promise<void> | void } | null;
  await Promise.resolve(closable?.close?.()).catch(() => {});
}
