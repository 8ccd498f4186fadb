// Runs the real bot (discord.js client, session engine, Postgres) against the fake Discord for a test.
import type { Agent, AgentReply, ChatMessage } from '../../../tasks/agent.ts';
import type { TaskRecord } from '../../../tasks/model.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import type { PolicyVersion } from '../../../prisma/generated/client.ts';
import { createRuntime, type Runtime } from '../../../bot/runtime.ts';
import type { Database } from '../../../prisma/db.ts';
import { DiscordBot, type DiscordBotOptions } from '../../../bot/discord/bot.ts';
import type { Limits } from '../../../bot/limits.ts';
import type { PrivacySettings } from '../../../bot/privacy.ts';
import type { BotMetrics } from '../../../bot/health.ts';
import type { Logger } from '../../../tasks/logger.ts';
import type { Evaluate, RenderPage } from '../../../bot/session/types.ts';
import { FakeDiscord, type FakeUser, type InteractionRecord, type Shown } from '../../../testing/fake-discord.ts';
import { createTestDatabase } from '../../../testing/database.ts';

export type TestDb = Awaited<ReturnType<typeof createTestDatabase>>;

/** An agent whose messages come from a function of the dialogue: the model stand-in of these tests. */
export function scriptedAgent(
  name: string,
  next: (dialogue: ChatMessage[]) => string | Promise<string>,
): Agent & { calls: number } {
  const agent = {
    name,
    calls: 0,
    async reply(dialogue: ChatMessage[]): Promise<AgentReply> {
      agent.calls++;
      return { text: await next(dialogue) };
    },
  };
  return agent;
}

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields: Record<string, unknown>;
}

/** A logger that keeps every line, for tests of what is logged (`lines(level, msg)`: those with that message). */
export function recordingLog(): Logger & {
  all: LogLine[];
  lines(level: LogLine['level'], msg: string): Record<string, unknown>[];
} {
  const all: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (a: object | string, msg?: string): void => {
      all.push(
        typeof a === 'string'
          ? { level, msg: a, fields: {} }
          : { level, msg: msg ?? '', fields: a as Record<string, unknown> },
      );
    };
  return {
    all,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    lines: (level, msg) => all.filter((l) => l.level === level && l.msg === msg).map((l) => l.fields),
  };
}

export interface HarnessOptions {
  tasks: TaskRecord[];
  agent: Agent;
  /** The agent of a given policy version (A/B tests); default: `agent` for every version. */
  agentFor?: (policy: PolicyVersion) => Agent | undefined;
  /** Loads the agent of a version, replacing `agentFor`/`agent` (a test that holds the first load, as the local server's is slow). */
  loadAgent?: (policy: PolicyVersion) => Promise<Agent>;
  /** How long the agent may take before the person is told it is unavailable (default: the engine's). */
  agentWaitMs?: number;
  /** How long an unattended step may wait before it is overdue (default: the engine's). */
  overdueMs?: number;
  /** How long the agent may write before the person sees it typing (the engine's default: 2 s). */
  typingAfterMs?: number;
  /** 'chromium': the real renderer and frontend evaluator; default: none (frontend sessions refused). */
  render?: RenderPage | null | 'chromium';
  evaluate?: Evaluate;
  consentText?: string;
  /** Opens the database the bot uses (default: the test database's own connection). */
  openDb?: (url: string) => Promise<Database>;
  /** Per-person limits (default: none). */
  limits?: Limits;
  /** Answers scored at once (default: the engine's). */
  scoringPool?: number;
  /** Settings of the Discord bot beyond the harness's own (guilds, operators, ...). */
  botOptions?: (fake: FakeDiscord) => Partial<DiscordBotOptions>;
  /** A logger for the bot (tests that look at what is logged). */
  log?: Logger;
  /** Deletions: the keyed hash's secret and the folders searched for a deleted person's text. */
  privacy?: PrivacySettings;
  /** Metrics the engine and the bot report to (bot/health.ts). */
  metrics?: BotMetrics;
}

export class BotHarness {
  fake!: FakeDiscord;
  tdb!: TestDb;
  runtime!: Runtime;
  bot!: DiscordBot;
  policy!: PolicyVersion;
  /** The database the bot uses. */
  botDb!: Database;
  /** A role of the default guild whose members are operators (give it with `command(..., { roles: [h.operatorRole] })`). */
  operatorRole = '';
  readonly consentText: string;

  constructor(readonly options: HarnessOptions) {
    this.consentText = options.consentText ?? 'TEST CONSENT: we record this conversation.';
  }

  async start(): Promise<this> {
    this.tdb = await createTestDatabase();
    await importTasks(this.tdb.prisma, this.options.tasks);
    this.policy = await this.tdb.prisma.policyVersion.create({
      data: {
        name: 'test-policy',
        algorithm: 'external',
        checkpointPath: '/nonexistent',
        checkpointSha256: '0'.repeat(64),
        status: 'deployed',
        deployedAt: new Date(),
      },
    });
    this.fake = await new FakeDiscord({ heartbeatIntervalMs: 1_000 }).start();
    this.operatorRole = this.fake.role(this.fake.guildId, 'operators');
    this.botDb = this.options.openDb ? await this.options.openDb(this.tdb.url) : this.tdb.db;
    await this.startBot();
    return this;
  }

  async startBot(): Promise<void> {
    this.runtime = await createRuntime({
      channel: 'discord',
      db: this.botDb,
      maxTurns: 10,
      idleMinutes: 30,
      loadAgent: this.options.loadAgent ?? (async (policy) => this.options.agentFor?.(policy) ?? this.options.agent),
      ...(this.options.render === 'chromium' ? {} : { render: this.options.render ?? null }),
      ...(this.options.evaluate ? { evaluate: this.options.evaluate } : {}),
      policyPollMs: 500,
      ...(this.options.agentWaitMs !== undefined ? { agentWaitMs: this.options.agentWaitMs } : {}),
      ...(this.options.overdueMs !== undefined ? { overdueMs: this.options.overdueMs } : {}),
      ...(this.options.typingAfterMs !== undefined ? { typingAfterMs: this.options.typingAfterMs } : {}),
      ...(this.options.limits ? { limits: this.options.limits } : {}),
      ...(this.options.scoringPool !== undefined ? { scoringPool: this.options.scoringPool } : {}),
      ...(this.options.log ? { log: this.options.log } : {}),
      ...(this.options.privacy ? { privacy: this.options.privacy } : {}),
      ...(this.options.metrics ? { observer: this.options.metrics } : {}),
    });
    this.bot = new DiscordBot(
      this.runtime.engine,
      this.runtime.services,
      {
        token: 'fake-bot-token',
        apiBase: this.fake.apiBase,
        guildIds: [this.fake.guildId],
        consentText: this.consentText,
        exportSalt: 'test-export-salt',
        expiryCheckMs: 250,
        operatorRoleIds: [this.operatorRole],
        ...(this.options.metrics ? { metrics: this.options.metrics } : {}),
        ...this.options.botOptions?.(this.fake),
      },
      this.options.log,
    );
    await this.bot.start();
  }

  /** Stops the bot as a crash would, leaving the database and Discord as they are. */
  async stopBot(): Promise<void> {
    await this.bot.stop();
    await this.runtime.close();
  }

  async stop(): Promise<void> {
    await this.bot?.stop().catch(() => {});
    await this.runtime?.close().catch(() => {});
    await this.fake?.stop();
    if (this.botDb && this.botDb !== this.tdb.db) await this.botDb.close().catch(() => {});
    await this.tdb?.drop();
  }

  /** Waits until the interaction's replies satisfy `pred`; returns the latest reply shown. */
  async reply(
    i: InteractionRecord,
    pred: (s: Shown) => boolean = (s) => s.kind !== 'callback',
    what = 'a reply',
  ): Promise<Shown> {
    return this.fake.waitFor(() => this.fake.replies(i).filter(pred).at(-1), 30_000, what);
  }

  /** Runs /task start and accepts the consent when asked; returns the session's thread id. */
  async startSession(
    user: FakeUser,
    kind: 'backend' | 'frontend',
  ): Promise<{ threadId: string; start: InteractionRecord; hidden: Shown[] }> {
    const start = this.fake.command(user, 'task', 'start', { kind });
    const first = await this.reply(start, (s) => s.kind === 'original', 'the /task start reply');
    let source = start;
    if (first.components.length && first.content.includes(this.consentText)) {
      source = this.fake.click(user, first, `consent:accept:${kind}`);
    }
    const hiddenFirst = await this.reply(
      source,
      (s) => (s.kind === 'original' || s.kind === 'followup') && s.content.includes('Only you can see this'),
      'the hidden information',
    );
    const threadId = /<#(\d+)>/.exec(hiddenFirst.content)?.[1];
    if (!threadId) throw new Error(`no thread in ${hiddenFirst.content}`);
    const hidden = this.fake
      .replies(source)
      .filter((s) => s.kind === 'original' || s.kind === 'followup')
      .filter((s) => s.at >= hiddenFirst.at);
    return { threadId, start, hidden };
  }

  /** Waits for the n-th (1-based) agent message in a thread. */
  agentMessage(threadId: string, n: number): Promise<Shown> {
    return this.fake.waitFor(
      () => this.fake.inChannel(threadId).filter((s) => s.content.startsWith('**Agent**'))[n - 1],
      30_000,
      `agent message ${n}`,
    );
  }
}
