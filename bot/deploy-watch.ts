// Keeps the bot's idea of the deployed policy current: a NOTIFY on `policy_deployed` (Postgres, and PGlite
// within one process) triggers an immediate re-read, and a poll catches notifications lost while the listening
// connection was down (and deployments made by another process on PGlite, which has no cross-process NOTIFY).
import type { PolicyVersion } from '../prisma/generated/client.ts';
import type { Database } from '../prisma/db.ts';
import type { Logger } from '../tasks/logger.ts';
import { deployedPolicy } from '../prisma/policy-store.ts';
import { POLICY_CHANNEL } from '../prisma/deployment-store.ts';

export class PolicyWatcher {
  private current: PolicyVersion | null = null;
  private timer: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private listeners = new Set<(v: PolicyVersion | null) => void>();

  constructor(
    private readonly db: Database,
    private readonly pollMs: number,
    private readonly log?: Logger,
  ) {}

  get deployed(): PolicyVersion | null {
    return this.current;
  }

  onChange(fn: (v: PolicyVersion | null) => void): void {
    this.listeners.add(fn);
  }

  async start(): Promise<void> {
    await this.refresh();
    try {
      this.unlisten = await this.db.listen(POLICY_CHANNEL, () => void this.refresh());
    } catch (err) {
      this.log?.warn({ err: (err as Error).message }, 'cannot LISTEN for deployments; polling only');
    }
    this.timer = setInterval(() => void this.refresh(), this.pollMs);
    this.timer.unref();
  }

  /** Re-reads the deployed version; returns it. */
  async refresh(): Promise<PolicyVersion | null> {
    try {
      const v = await deployedPolicy(this.db.prisma);
      if (v?.id !== this.current?.id) {
        this.log?.info({ policy: v?.name ?? null }, 'deployed policy changed');
        this.current = v;
        for (const fn of this.listeners) fn(v);
      } else {
        this.current = v;
      }
    } catch (err) {
      this.log?.warn({ err: (err as Error).message }, 'cannot read the deployed policy; keeping the current one');
    }
    return this.current;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.unlisten?.().catch(() => {});
    this.unlisten = null;
  }
}
