// The per-token log-probabilities of a reply as chat-client.ts returns them (from the wire's `logprobs.content`),
// and the exact token ids read from them when they were asked for (what an endpoint agent records of a turn).
import type { TokenLogprob } from './agent.ts';

const TOKEN_ID = /^token_id:(\d+)$/;

/** The token ids of logprobs asked for with `tokenIds`; null when any token is not "token_id:<id>" (the server ignored the request). */
export function tokenIdsOf(logprobs: readonly TokenLogprob[]): number[] | null {
  const ids: number[] = [];
  for (const t of logprobs) {
    const m = TOKEN_ID.exec(t.token);
    if (!m) return null;
    ids.push(Number(m[1]));
  }
  return ids;
}

export function toLogprobs(
  content: readonly { token: string; logprob: number; top_logprobs?: { token: string; logprob: number }[] | null }[],
): TokenLogprob[] {
  return content.map((c) => {
    const t: TokenLogprob = { token: c.token, logprob: c.logprob };
    if (c.top_logprobs && c.top_logprobs.length > 0)
      t.top = c.top_logprobs.map((x) => ({ token: x.token, logprob: x.logprob }));
    return t;
  });
}
