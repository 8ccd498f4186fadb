// Who is asking, for the dashboard (bot/dashboard/server.ts). Every request needs a secret. Bound to loopback, the
// server makes one when it starts and prints it once as a login link (as Jupyter does): another local user or a
// local process does not become an operator just by reaching the port. Bound to any other address, every request
// needs a token (`sweetloop dashboard token create`), whose secret is shown once and stored only as its sha256
// (prisma/dashboard-store.ts); such a token works on loopback too. A moderator's token sees one guild. Writes carry a CSRF token: an HMAC of the principal under a secret made when the server starts, so a
// page from another site cannot post on the viewer's behalf.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { liveDashboardToken, type DashboardRole } from '../../prisma/dashboard-store.ts';
import { newTokenSecret, tokenHash, TOKEN_PREFIX } from './token.ts';

export interface Viewer {
  role: DashboardRole;
  /** The one guild a moderator sees; null for an operator. */
  guildId: string | null;
  /** What the audit log names: "dashboard:loopback" or "dashboard:<token prefix>". */
  actor: string;
  /** The key the CSRF token is bound to. */
  principal: string;
}

export const TOKEN_COOKIE = 'sweetloop_dashboard';
export { newTokenSecret, tokenHash };
export { isLoopbackHost, loopbackHostHeader } from '../../tasks/loopback.ts';

/** The secret a request carries: the Authorization bearer, else the cookie. */
export function presentedSecret(headers: Record<string, string | string[] | undefined>): string | null {
  const auth = headers.authorization;
  if (typeof auth === 'string' && /^Bearer\s+\S+$/i.test(auth)) return auth.split(/\s+/)[1]!;
  const cookie = headers.cookie;
  if (typeof cookie === 'string') {
    for (const part of cookie.split(';')) {
      const [k, ...v] = part.trim().split('=');
      if (k === TOKEN_COOKIE) return decodeURIComponent(v.join('='));
    }
  }
  return null;
}

/** The viewer a secret stands for, or null when it is unknown or revoked. */
export async function viewerOf(prisma: PrismaClient, secret: string): Promise<Viewer | null> {
  if (!secret.startsWith(TOKEN_PREFIX) || secret.length > 200) return null;
  const t = await liveDashboardToken(prisma, tokenHash(secret));
  return t ? { role: t.role, guildId: t.guildId, actor: `dashboard:${t.prefix}`, principal: t.id } : null;
}

export const LOOPBACK_VIEWER: Viewer = {
  role: 'operator',
  guildId: null,
  actor: 'dashboard:loopback',
  principal: 'loopback',
};

/** Whether a presented secret is the loopback server's own (compared in constant time). */
export function isLoginSecret(presented: string, loginSecret: string): boolean {
  const a = Buffer.from(tokenHash(presented), 'hex');
  const b = Buffer.from(tokenHash(loginSecret), 'hex');
  return timingSafeEqual(a, b);
}

/** CSRF tokens for one server process. */
export class Csrf {
  private readonly key = randomBytes(32);

  tokenFor(v: Viewer): string {
    return createHmac('sha256', this.key).update(v.principal).digest('base64url');
  }

  check(v: Viewer, presented: unknown): boolean {
    if (typeof presented !== 'string') return false;
    const want = Buffer.from(this.tokenFor(v));
    const got = Buffer.from(presented);
    return got.length === want.length && timingSafeEqual(got, want);
  }
}
