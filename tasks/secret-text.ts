// Hiding a known secret (an API key, a configured token) in text that is about to be shown or logged. Only whole
// occurrences are replaced: a secret that is part of a longer word is not that secret there, and replacing it
// mangles what the reader needs (a key `x` turned the host `gpu-box` into `gpu-bo[redacted]`).

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `text` with every whole occurrence of `secret` (no letter or digit right before or after it) replaced. */
export function scrubSecret(text: string, secret: string, censor = '[redacted]'): string {
  if (!secret) return text;
  return text.replace(new RegExp(`(?<![A-Za-z0-9])${escape(secret)}(?![A-Za-z0-9])`, 'g'), () => censor);
}
