// Who may do what on Discord, decided in code on every command (Discord's default member permissions only
// hide commands, and any server admin can re-grant them):
// - guilds: with an allowlist configured, the bot answers in those guilds only (and leaves others);
// - operators (configured user ids, or members of a configured role): everything, in every guild;
// - guild moderators (Manage Server, or a configured moderator role): their own guild's statistics, export,
//   flags and bans, and the progress of the studies that run there; nothing that touches every guild;
// - everyone else: no /mod at all.
import { PermissionFlagsBits, type Interaction } from 'discord.js';
import type { Actor } from '../moderation.ts';

export interface AccessSettings {
  /** Allowed guilds; empty: any. */
  guildIds: string[];
  operatorIds?: string[];
  operatorRoleIds?: string[];
  moderatorRoleIds?: string[];
}

export type Authority = 'operator' | 'moderator' | null;

/** /mod subcommands a guild moderator may use (within their guild); every other one is for operators. */
export const GUILD_MODERATOR_SUBCOMMANDS: ReadonlySet<string> = new Set([
  'stats',
  'export',
  'ban',
  'unban',
  'flag',
  'flags',
  'resolve',
]);

/** Subcommands of /mod's groups ("group subcommand") a guild moderator may use; they see their guild's part only. */
export const GUILD_MODERATOR_GROUP_SUBCOMMANDS: ReadonlySet<string> = new Set(['study status']);

export function guildAllowed(settings: Pick<AccessSettings, 'guildIds'>, guildId: string | null | undefined): boolean {
  if (!settings.guildIds.length) return true;
  return !!guildId && settings.guildIds.includes(guildId);
}

/** The role ids of the member behind an interaction (a cached member or the raw API member). */
function roleIds(i: Interaction): string[] {
  const roles = (i.member as { roles?: string[] | { cache: Map<string, unknown> } } | null)?.roles;
  if (!roles) return [];
  return Array.isArray(roles) ? roles : [...roles.cache.keys()];
}

export function authorityOf(settings: AccessSettings, i: Interaction): Authority {
  if (!guildAllowed(settings, i.guildId)) return null;
  const roles = roleIds(i);
  if (settings.operatorIds?.includes(i.user.id)) return 'operator';
  if (settings.operatorRoleIds?.some((r) => roles.includes(r))) return 'operator';
  if (!i.guildId) return null;
  if (i.memberPermissions?.has(PermissionFlagsBits.ManageGuild)) return 'moderator';
  if (settings.moderatorRoleIds?.some((r) => roles.includes(r))) return 'moderator';
  return null;
}

/** May someone with `authority` run this /mod subcommand? */
export function mayRun(authority: Authority, subcommand: string, group: string | null): boolean {
  if (authority === 'operator') return true;
  if (authority === 'moderator')
    return group === null
      ? GUILD_MODERATOR_SUBCOMMANDS.has(subcommand)
      : GUILD_MODERATOR_GROUP_SUBCOMMANDS.has(`${group} ${subcommand}`);
  return false;
}

export function actorFor(authority: Exclude<Authority, null>, i: Interaction): Actor {
  return { id: i.user.id, guildId: i.guildId, operator: authority === 'operator' };
}
