// Models wrap code and pages in markdown fences, with or without a language tag, sometimes several blocks,
// sometimes an opening fence the reply was cut off before closing. This is the one place that undoes that.

const OPEN = /^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n`]*$/;

interface Block {
  lang: string;
  body: string;
}

/**
 * The code inside markdown fences.
 *
 * - No fence at all: the text unchanged except for surrounding blank lines.
 * - One or more complete fenced blocks (``` or ~~~, any language tag): their contents, in order, joined by a
 *   blank line. Blocks tagged with a language other than the first tagged block's are dropped (a ```bash
 *   install line or an ```output sample after the ```python code), untagged blocks are kept.
 * - An opening fence that is never closed (a reply cut at its length limit): everything after it.
 * - Only a stray fence line with nothing after it (unfenced code followed by a closing fence): the text
 *   without its fence lines.
 * Text outside the fences (prose around the code) is dropped whenever there is a fence.
 */
export function stripCodeFences(text: string): string {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const blocks: Block[] = [];
  let open: { fence: string; lang: string; start: number } | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!open) {
      const m = OPEN.exec(line);
      if (m) open = { fence: m[1]!, lang: m[2]!.toLowerCase(), start: i + 1 };
      continue;
    }
    // A closing fence uses the same character, at least as many of them, and carries no info string.
    const trimmed = line.trim();
    if (trimmed.length >= open.fence.length && trimmed === open.fence[0]!.repeat(trimmed.length)) {
      blocks.push({ lang: open.lang, body: lines.slice(open.start, i).join('\n') });
      open = null;
    }
  }
  if (open && lines.slice(open.start).some((l) => l.trim() !== '')) {
    blocks.push({ lang: open.lang, body: lines.slice(open.start).join('\n') });
  }
  // Only a stray fence (e.g. a closing one after unfenced code): drop the fence lines, keep the rest.
  if (blocks.length === 0) return trimBlankLines(lines.filter((l) => !OPEN.test(l)).join('\n'));
  const firstLang = blocks.find((b) => b.lang !== '')?.lang ?? '';
  const kept = blocks.filter((b) => b.lang === '' || b.lang === firstLang);
  return trimBlankLines(kept.map((b) => b.body).join('\n\n'));
}

/** Removes leading and trailing blank lines but keeps the first line's indentation (it may be code). */
function trimBlankLines(s: string): string {
  return s.replace(/^(?:[ \t]*\r?\n)+/, '').replace(/\s+$/, '');
}
