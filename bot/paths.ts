// Where a path lies, for the rules that confine one: deletion never enters the model folders (privacy.ts), an
// export's chat template is read only from under the project (export/chat-template.ts).
import { sep } from 'node:path';

/** Whether the absolute, normalised `path` is `dir` or lies beneath it (no prefix tricks: /data2 is not in /data). */
export function isInside(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}
