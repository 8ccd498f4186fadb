// The Discord objects the fake Discord (fake-discord.ts) records and hands out: snowflakes, users, requests,
// what the bot showed, interactions, and the fields every message carries.
const DISCORD_EPOCH = 1420070400000n;
let snowflakeCounter = 0n;
/** A real-looking 18-19 digit snowflake, increasing with time. */
export function snowflake(): string {
  snowflakeCounter = (snowflakeCounter + 1n) & 0xfffn;
  return (((BigInt(Date.now()) - DISCORD_EPOCH) << 22n) | (1n << 17n) | snowflakeCounter).toString();
}

export interface FakeUser {
  id: string;
  username: string;
  global_name: string;
  discriminator: string;
  avatar: null;
  bot: boolean;
}

export interface RecordedFile {
  name: string;
  contentType: string;
  data: Buffer;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: string;
  body: any;
  files: RecordedFile[];
  at: number;
  status: number;
}

/** Something the bot showed: a channel message, an interaction reply, an edit, a follow-up. */
export interface Shown {
  kind: 'channel' | 'callback' | 'original' | 'followup' | 'edit';
  id: string;
  channelId: string | null;
  interactionId: string | null;
  /** Interaction callback type (4 message, 5 deferred, 6 deferred update, 7 update, 9 modal). */
  callbackType?: number;
  content: string;
  embeds: any[];
  components: any[];
  flags: number;
  files: RecordedFile[];
  /** performance.now() when received. */
  at: number;
  /** Date.now() when received, to compare with database timestamps. */
  wallAt: number;
  raw: any;
}

export interface InteractionRecord {
  id: string;
  token: string;
  type: number;
  userId: string;
  sentAt: number;
  ackAt: number | null;
  callbackType: number | null;
  payload: any;
  /** The modal the bot opened in answer (callback type 9). */
  modal?: any;
}

export const PERMISSIONS = {
  // A plain member: view, send, read history, use application commands, send in threads.
  member: (1n << 10n) | (1n << 11n) | (1n << 16n) | (1n << 31n) | (1n << 38n),
  manageGuild: 1n << 5n,
};

/** The options of a command invocation: the subcommand (inside its group, when "group subcommand") holds them. */
export function subcommandOptions(subcommand: string | null, opts: unknown[]): unknown[] {
  if (!subcommand) return opts;
  const [first, second] = subcommand.split(' ');
  if (second) return [{ type: 2, name: first, options: [{ type: 1, name: second, options: opts }] }];
  return [{ type: 1, name: subcommand, options: opts }];
}

/** The fields every message object carries that the fake never varies (no edits, mentions, pins or TTS). */
export function plainMessageFields() {
  return {
    timestamp: new Date().toISOString(),
    edited_timestamp: null,
    tts: false,
    mention_everyone: false,
    mentions: [],
    mention_roles: [],
    pinned: false,
  };
}
