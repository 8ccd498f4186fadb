// Discord refuses messages over 2,000 characters. Long text is split into several messages, never cut:
// at line breaks where possible, and code stays inside a code block in every part.
export const DISCORD_MESSAGE_LIMIT = 2000;

/** Splits plain text into parts of at most `limit` characters, preferring line breaks, then spaces. */
export function splitText(text: string, limit = DISCORD_MESSAGE_LIMIT): string[] {
  if (text.length <= limit) return [text];
  const parts: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    let cut = rest.lastIndexOf('\n', limit);
    if (cut < limit / 2) cut = rest.lastIndexOf(' ', limit);
    if (cut < limit / 2) cut = limit;
    parts.push(rest.slice(0, cut));
    rest = rest.slice(cut).replace(/^\n/, '');
  }
  if (rest.length) parts.push(rest);
  return parts;
}

/** Code in fenced blocks, each part a complete block of at most `limit` characters. */
export function splitCodeBlock(code: string, language = '', limit = DISCORD_MESSAGE_LIMIT): string[] {
  // A ``` inside the code would close the fence early; a zero-width space keeps it visible but inert.
  const safe = code.replace(/```/g, '`\u200b``');
  const overhead = `\`\`\`${language}\n\n\`\`\``.length;
  return splitText(safe, limit - overhead).map((part) => `\`\`\`${language}\n${part}\n\`\`\``);
}
