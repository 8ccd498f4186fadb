// What every Discord handler is given: the session engine, the bot's services, the settings, and the few
// helpers all of them use to answer an interaction (acknowledge first, reply privately, tell the person to wait
// through a database outage). Handlers never see the database.
import { randomBytes } from 'node:crypto';
import {
  DiscordAPIError,
  MessageFlags,
  type ButtonInteraction,
  type Client,
  type Interaction,
  type RepliableInteraction,
} from 'discord.js';
import type { Logger } from '../../tasks/logger.ts';
import type { Hooks, Person, SessionEngine } from '../session/engine.ts';
import type { BotMetrics } from '../health.ts';
import type { BotServices } from '../services.ts';
import type { Part } from './present.ts';
import type { ThreadViews } from './thread-view.ts';

export interface DiscordBotOptions {
  token: string;
  /** REST base, e.g. https://discord.com/api or a local fake. */
  apiBase: string;
  /** The allowlist: guilds to register commands in and answer in (others are ignored and left); empty: any, global commands. */
  guildIds: string[];
  /** Operators (bot/discord/permissions.ts): user ids, and roles whose members are operators. */
  operatorIds?: string[];
  operatorRoleIds?: string[];
  /** Roles whose members moderate their guild (besides Manage Server). */
  moderatorRoleIds?: string[];
  /** Where acknowledgement latency and errors are counted (bot/health.ts). */
  metrics?: BotMetrics;
  consentText: string;
  exportSalt: string;
  /** EXPORT_SALT is the development default: /mod export refuses to run (pseudonyms would be guessable). */
  exportSaltIsDefault?: boolean;
  /** Where `/mod export` writes exports too large to attach (the moderator is told the path). */
  exportDir?: string;
  /** Chromium for frontend exports' screenshots. */
  chromiumPath?: string;
  /** How often idle sessions are looked for (ms). */
  expiryCheckMs?: number;
  /** How often sessions whose next step is overdue (nobody working on it) are looked for and advanced (ms; default 15 s). */
  sweepMs?: number;
  /** Largest export attached to a message (bytes); larger ones must use the CLI. */
  maxExportBytes?: number;
}

export interface BotContext {
  client: Client;
  engine: SessionEngine;
  services: BotServices;
  options: DiscordBotOptions;
  threads: ThreadViews;
  log?: Logger;
}

export const DB_WAIT_MESSAGE =
  'The database is unavailable at the moment. Please wait: nothing is lost, and I will continue as soon as it is back.';

/**
 * What a person is told when something broke on our side: a short message and an error id; the details go to
 * the log under that id (people never see internal errors, which may carry database or server details).
 */
export function internalError(
  ctx: Pick<BotContext, 'log' | 'options'>,
  err: unknown,
  where: Record<string, string>,
): string {
  const errorId = randomBytes(4).toString('hex');
  ctx.options.metrics?.errors.inc({ where: Object.keys(where)[0] ?? 'unknown' });
  ctx.log?.error(
    { errorId, err: (err as Error)?.message ?? String(err), stack: (err as Error)?.stack, ...where },
    'internal error',
  );
  return `Something went wrong on our side. Nothing you sent is lost; please try again in a moment. If it keeps happening, tell a moderator the error id \`${errorId}\`.`;
}

/** Replies privately, whatever state the interaction is in, with mentions off (replies may quote people). */
export async function say(i: RepliableInteraction, content: string | Part): Promise<void> {
  const body = { allowedMentions: { parse: [] }, ...(typeof content === 'string' ? { content } : content) };
  if (i.deferred || i.replied) await i.editReply(body);
  else await i.reply({ ...body, flags: MessageFlags.Ephemeral });
}

/** Tells the person once that the database is away (the operation keeps retrying). */
export function waitNotice(i: RepliableInteraction): () => Promise<void> {
  return () => say(i, DB_WAIT_MESSAGE);
}

export function hooksFor(i: RepliableInteraction): Hooks {
  return { onDbWaiting: waitNotice(i) };
}

export function personOf(i: Interaction): Person {
  return { externalId: i.user.id, displayName: i.user.globalName ?? i.user.username };
}

/**
 * Acknowledges the interaction (Discord's 3-second limit holds whatever comes next); false when it was handled
 * before (a redelivery), in which case the handler does nothing. Discord takes one acknowledgement of an
 * interaction, from whichever process and across restarts, and refuses the next (40060): that is the record of
 * it being handled, so no row is written for it (one round trip of every click and command: bench:bot).
 */
export async function ack(ctx: BotContext, i: RepliableInteraction, kind: 'reply' | 'update'): Promise<boolean> {
  try {
    if (kind === 'reply') await i.deferReply({ flags: MessageFlags.Ephemeral });
    else await (i as ButtonInteraction).deferUpdate();
  } catch (err) {
    // 40060: already acknowledged; 10062: unknown interaction. Either way someone else handled it.
    if (err instanceof DiscordAPIError && (err.code === 40060 || err.code === 10062)) return false;
    throw err;
  }
  ctx.options.metrics?.ackSeconds.observe(Math.max(0, Date.now() - i.createdTimestamp) / 1000);
  return true;
}
