// A Python reference function cut into facts (facts.ts) a person can say: named constants, dictionary entries,
// defaults, conditions with what they lead to, formulas, returns, rounding and sorting calls, comments.
import { makeFact, type Fact } from './facts.ts';

interface LogicalLine {
  indent: number;
  code: string;
  comment: string;
  /** Comment lines written just above it. */
  leading: string[];
}

/** Joins bracketed continuations, separates comments (outside strings), keeps indentation. */
function logicalLines(source: string): LogicalLine[] {
  const out: LogicalLine[] = [];
  let pending: string[] = [];
  let buffer = '';
  let comment = '';
  let indent = 0;
  let depth = 0;
  let inTriple: string | null = null;
  for (const physical of source.replace(/\r\n?/g, '\n').split('\n')) {
    if (buffer === '' && depth === 0 && !inTriple) {
      const trimmed = physical.trim();
      if (trimmed === '') continue;
      if (trimmed.startsWith('#')) {
        pending.push(trimmed.replace(/^#+\s*/, ''));
        continue;
      }
      indent = physical.length - physical.trimStart().length;
    }
    let i = 0;
    let code = '';
    let quote: string | null = inTriple;
    while (i < physical.length) {
      const c = physical[i] as string;
      if (quote) {
        if (quote.length === 3 && physical.startsWith(quote, i)) {
          code += quote;
          i += 3;
          quote = null;
          continue;
        }
        if (c === '\\') {
          code += physical.slice(i, i + 2);
          i += 2;
          continue;
        }
        if (quote.length === 1 && c === quote) quote = null;
        code += c;
        i++;
        continue;
      }
      if (physical.startsWith('"""', i) || physical.startsWith("'''", i)) {
        quote = physical.slice(i, i + 3);
        code += quote;
        i += 3;
        continue;
      }
      if (c === '"' || c === "'") quote = c;
      else if (c === '#') {
        comment = [comment, physical.slice(i + 1).trim()].filter(Boolean).join(' ');
        break;
      } else if ('([{'.includes(c)) depth++;
      else if (')]}'.includes(c)) depth = Math.max(0, depth - 1);
      code += c;
      i++;
    }
    inTriple = quote && quote.length === 3 ? quote : null;
    buffer += (buffer ? ' ' : '') + code.trim();
    if (depth > 0 || inTriple || buffer.endsWith('\\')) {
      if (buffer.endsWith('\\')) buffer = buffer.slice(0, -1);
      continue;
    }
    out.push({ indent, code: buffer, comment, leading: pending });
    buffer = '';
    comment = '';
    pending = [];
  }
  if (buffer) out.push({ indent, code: buffer, comment, leading: pending });
  return out;
}

/** A logical line that is only a string literal: a docstring (or a string used as a comment). */
const STRING_STATEMENT = /^[rRbBuUfF]{0,2}(?:"""[\s\S]*"""|'''[\s\S]*'''|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')$/;

/**
 * The code of a Python source without its comments and docstrings, one logical line a line. Comments and
 * docstrings explain the task in words, which a collaborator is asked to pass on; the code is what must not be pasted.
 */
export function pythonCode(source: string): string {
  return logicalLines(source)
    .map((l) => l.code)
    .filter((code) => !STRING_STATEMENT.test(code))
    .join('\n');
}

/** Words from a name: DISCOUNT_THRESHOLD -> "discount threshold". */
function humanName(name: string): string {
  return name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/_+/g, ' ')
    .trim()
    .toLowerCase();
}

const LITERAL = /^(?:-?\d[\d_]*(?:\.\d+)?(?:e-?\d+)?|True|False|None|'[^']*'|"[^"]*"|[[({][\s\S]*[\])}])$/;

/** A literal worth quoting (numbers, strings, booleans, containers without calls). */
function isLiteral(expr: string): boolean {
  if (!LITERAL.test(expr.trim())) return false;
  return (
    !/[A-Za-z_]\w*\s*\(/.test(expr.replace(/'[^']*'|"[^"]*"/g, '')) &&
    !/\bfor\b/.test(expr.replace(/'[^']*'|"[^"]*"/g, ''))
  );
}

/** Comparison operators in words, constants replaced by their values (so "score >= PASS_MIN" says the number). */
function plainCondition(expr: string, constants: Map<string, string>): string {
  // "ROUNDING == 'up'" is a switch, not a comparison with the constant's value: keep the name in words.
  let s = expr.replace(
    /\b([A-Z][A-Z0-9_]*)\s*(==|!=)\s*('[^']*'|"[^"]*"|-?\d+(?:\.\d+)?|True|False)/g,
    (_all, name: string, op: string, lit: string) => `${humanName(name)} ${op} ${lit}`,
  );
  s = s.replace(/\b[A-Z][A-Z0-9_]*\b/g, (name) => constants.get(name) ?? name);
  s = s
    .replace(/\s*>=\s*/g, ' is at least ')
    .replace(/\s*<=\s*/g, ' is at most ')
    .replace(/\s*!=\s*/g, ' is not ')
    .replace(/\s*==\s*/g, ' is ')
    .replace(/\s+is not None\b/g, ' is given')
    .replace(/\s*(?<![-=])>\s*/g, ' is more than ')
    .replace(/\s*<(?![=-])\s*/g, ' is less than ')
    .replace(/\bnot\s+([A-Za-z_][\w.]*)$/, '$1 is empty')
    .replace(/\blen\(([^()]+)\)/g, 'the length of $1');
  return s.replace(/\s+/g, ' ').trim();
}

/** What a statement does, in words. */
function plainStatement(code: string, constants: Map<string, string>): string {
  let m: RegExpExecArray | null;
  if ((m = /^return\s+(.+)$/.exec(code))) return `the result is ${withValues(m[1] as string, constants)}`;
  if (code === 'return') return 'it returns nothing';
  if ((m = /^raise\s+(.+)$/.exec(code))) return `it raises ${m[1]}`;
  if (code === 'continue') return 'that one is skipped';
  if (code === 'break') return 'it stops there';
  if ((m = /^([\w.]+)\.append\((.+)\)$/.exec(code))) return `${m[2]} is added to ${m[1]}`;
  if ((m = /^([\w.[\]'"]+)\s*([+\-*/])=\s*(.+)$/.exec(code))) {
    const verb = { '+': 'increases by', '-': 'decreases by', '*': 'is multiplied by', '/': 'is divided by' }[
      m[2] as '+'
    ];
    return `${m[1]} ${verb} ${withValues(m[3] as string, constants)}`;
  }
  if ((m = /^([\w.[\]'", ]+?)\s*=\s*(.+)$/.exec(code)))
    return `${m[1]} becomes ${withValues(m[2] as string, constants)}`;
  return code;
}

function withValues(expr: string, constants: Map<string, string>): string {
  const replaced = expr.replace(/\b[A-Z][A-Z0-9_]*\b/g, (name) => constants.get(name) ?? name);
  return replaced.length > 120 ? expr : replaced;
}

export function backendFacts(reference: string): Fact[] {
  // `def f(x): return x` written on one line is two statements.
  const lines = logicalLines(reference).flatMap((l) => {
    const m = /^((?:async\s+)?def\s+\w+\s*\(.*\)\s*(?:->[^:]*)?:)\s*(\S.*)$/.exec(l.code);
    return m
      ? [
          { ...l, code: m[1] as string, comment: '' },
          { indent: l.indent + 4, code: m[2] as string, comment: l.comment, leading: [] },
        ]
      : [l];
  });
  const facts: Fact[] = [];
  // Module- or function-level names bound to literals, so conditions can say the number instead of the name.
  const constants = new Map<string, string>();
  for (const l of lines) {
    const m = /^([A-Za-z_]\w*)\s*=\s*(.+)$/.exec(l.code);
    if (m && isLiteral(m[2] as string) && (m[2] as string).length <= 60)
      constants.set(m[1] as string, (m[2] as string).trim());
  }
  // Values a constant is compared with (ROUNDING == 'up') are the alternatives a question may name.
  const alternatives = new Map<string, string[]>();
  for (const l of lines) {
    for (const m of l.code.matchAll(/\b([A-Z][A-Z0-9_]*)\s*(?:==|!=)\s*('[^']*'|"[^"]*"|-?\d+(?:\.\d+)?)/g)) {
      alternatives.set(m[1] as string, [...(alternatives.get(m[1] as string) ?? []), m[2] as string]);
    }
  }
  const blockCondition: string[] = [];

  lines.forEach((line, idx) => {
    const { code } = line;
    const note = [...line.leading, line.comment].filter(Boolean).join('; ');
    const next = lines[idx + 1];
    const body = next && next.indent > line.indent ? next : undefined;
    let m: RegExpExecArray | null;

    for (const c of line.leading)
      facts.push(
        makeFact(c, [
          [c, 0.8],
          [code, 0.4],
        ]),
      );

    if ((m = /^(?:async\s+)?def\s+(\w+)\s*\((.*)\)\s*(?:->.*)?:$/.exec(code))) {
      const params = splitTopLevel(m[2] as string);
      const described = params
        .map((p) => p.split('=')[0]?.replace(/:.*$/, '').trim() ?? '')
        .filter((p) => p && p !== 'self');
      facts.push(
        makeFact(
          `The function ${m[1]} takes ${described.join(', ') || 'no arguments'}, in that order${note ? ` (${note})` : ''}`,
          [
            [m[1] as string, 0.5],
            [described.join(' '), 0.5],
            ['argument order', 0.6],
            [note, 0.8],
          ],
        ),
      );
      for (const p of params) {
        const d = /^\s*(\w+)\s*(?::[^=]+)?=\s*(.+)$/.exec(p);
        if (d)
          facts.push(
            makeFact(
              `If ${d[1]} is not given, it defaults to ${d[2]}`,
              [
                [d[1] as string, 1],
                ['default optional', 1],
              ],
              0.2,
            ),
          );
      }
      return;
    }
    if (/^(?:class|import|from)\b/.test(code)) return;
    if (/^(?:"""|''')/.test(code) && /(?:"""|''')$/.test(code)) {
      const text = code.replace(/^(?:"""|''')|(?:"""|''')$/g, '').trim();
      if (text) facts.push(makeFact(text, [[text, 0.8]]));
      return;
    }

    if (
      (m = /^(if|elif|while)\s+(.+?):\s*(\S.*)?$/.exec(code)) &&
      !/^(?:if|elif|while)\s.*\blambda\b[^:]*$/.test(m[2] as string)
    ) {
      const cond = m[2] as string;
      blockCondition[line.indent] = cond;
      const inline = m[3];
      const what = inline ? plainStatement(inline, constants) : body ? plainStatement(body.code, constants) : '';
      const lead = m[1] === 'while' ? 'While' : 'If';
      const extra = [note, body?.comment].filter(Boolean).join('; ');
      // Constants named in a condition belong to their own fact first; here they count for less.
      const ownWords = cond.replace(/\b[A-Z][A-Z0-9_]*\b/g, ' ');
      const constNames = (cond.match(/\b[A-Z][A-Z0-9_]*\b/g) ?? []).join(' ');
      facts.push(
        makeFact(
          `${lead} ${plainCondition(cond, constants)}, ${what}${extra ? ` (${extra})` : ''}`,
          [
            [ownWords, 1],
            [constNames, 0.5],
            [
              constNames
                .split(' ')
                .filter((n) => !alternatives.has(n))
                .map((n) => constants.get(n) ?? '')
                .join(' '),
              0.8,
            ],
            [inline ?? body?.code ?? '', 0.7],
            [extra, 0.9],
            [conditionWords(cond), 0.6],
          ],
          0.3,
        ),
      );
      return;
    }
    if ((m = /^else\s*:\s*(\S.*)?$/.exec(code))) {
      const cond = blockCondition[line.indent];
      const what = m[1] ? plainStatement(m[1], constants) : body ? plainStatement(body.code, constants) : '';
      facts.push(
        makeFact(
          `Otherwise${cond ? ` (when not ${plainCondition(cond, constants)})` : ''}, ${what}`,
          [
            [cond ?? '', 0.6],
            [body?.code ?? '', 0.7],
            [note, 0.9],
          ],
          0.1,
        ),
      );
      return;
    }
    if ((m = /^for\s+(.+?)\s+in\s+(.+):$/.exec(code))) {
      facts.push(
        makeFact(`It goes through each ${m[1]} in ${m[2]}${note ? ` (${note})` : ''}`, [
          [code, 0.6],
          [note, 0.9],
        ]),
      );
    } else if ((m = /^([A-Za-z_][\w.]*)\s*=\s*(.+)$/.exec(code)) && !/^[\w.]+\s*==/.test(code)) {
      const name = m[1] as string;
      const rhs = (m[2] as string).trim();
      if (line.indent > 0 && /^(?:0|0\.0|\[\]|\{\}|''|""|None|set\(\)|False|True)$/.test(rhs)) {
        // An accumulator starting value says little about what the function means.
        facts.push(
          makeFact(
            `${name} starts as ${rhs}${note ? ` (${note})` : ''}`,
            [
              [name, 0.5],
              [note, 0.7],
            ],
            -0.2,
          ),
        );
      } else if (isLiteral(rhs)) {
        const value = rhs.length > 150 ? `${rhs.slice(0, 147)}…` : rhs;
        facts.push(
          makeFact(
            `The ${humanName(name)} is ${value}${note ? ` (${note})` : ''}`,
            [
              [name, 1],
              [note, 0.8],
              [rhs, 0.5],
              [(alternatives.get(name) ?? []).join(' '), 0.5],
            ],
            0.5,
          ),
        );
        for (const [k, v] of dictEntries(rhs)) {
          facts.push(
            makeFact(
              `For ${k}, the ${humanName(name)} is ${v}`,
              [
                [k, 1],
                [name, 0.7],
                [note, 0.5],
              ],
              0.5,
            ),
          );
        }
      } else {
        facts.push(
          makeFact(
            `The ${humanName(name)} is ${withValues(rhs, constants)}${note ? ` (${note})` : ''}`,
            [
              [name, 1],
              [rhs, 0.6],
              [note, 0.8],
            ],
            0.2,
          ),
        );
      }
    } else if ((m = /^return\s+(.+)$/.exec(code))) {
      const cond = blockCondition[line.indent - 4] ?? '';
      facts.push(
        makeFact(
          `It returns ${withValues(m[1] as string, constants)}${note ? ` (${note})` : ''}`,
          [
            ['return', 0.5],
            [m[1] as string, 0.8],
            [note, 0.9],
            [cond, 0.3],
          ],
          0.1,
        ),
      );
    } else if (note) {
      facts.push(
        makeFact(note, [
          [note, 0.9],
          [code, 0.5],
        ]),
      );
    }
    facts.push(...callFacts(code, note, constants));
  });
  return facts;
}

function conditionWords(cond: string): string {
  const words: string[] = [];
  if (/\bnot\s+\w+\s*$|len\([^)]*\)\s*==\s*0|==\s*(?:\[\]|''|""|\{\})/.test(cond)) words.push('empty nothing');
  if (/<\s*0\b|<=\s*-/.test(cond)) words.push('negative');
  if (/==\s*0\b/.test(cond)) words.push('zero');
  if (/\bis None\b|==\s*None/.test(cond)) words.push('none missing');
  words.push('edge special');
  if (/>=|<=/.test(cond)) words.push('exactly threshold inclusive');
  if (/[<>]/.test(cond)) words.push('threshold');
  return words.join(' ');
}

/** Rounding, sorting and clamping calls are what people ask about most; say them plainly. */
function callFacts(code: string, note: string, constants: Map<string, string>): Fact[] {
  const facts: Fact[] = [];
  let m: RegExpExecArray | null;
  const roundRe = /\bround\(([^()]*(?:\([^()]*\)[^()]*)*),\s*([\w.-]+)\s*\)/g;
  // round() inside ceil/floor only guards against float noise; the ceil/floor is what the person means.
  while (!/(?:ceil|floor)\(\s*round\(/.test(code) && (m = roundRe.exec(code))) {
    const places = constants.get(m[2] as string) ?? m[2];
    facts.push(
      makeFact(
        `The result is rounded to ${places} decimal places${note ? ` (${note})` : ''}`,
        [
          ['round decimal', 1],
          [m[2] as string, 0.8],
          [m[1] as string, 0.4],
          [note, 0.6],
        ],
        0.4,
      ),
    );
  }
  if (/\bround\([^,()]*(?:\([^()]*\)[^,()]*)*\)/.test(code))
    facts.push(makeFact('The result is rounded to a whole number', [['round whole decimal integer', 1]], 0.2));
  if (/\bmath\.ceil\(/.test(code))
    facts.push(
      makeFact(
        `It rounds up (math.ceil)${note ? `: ${note}` : ''}`,
        [
          ['round up ceil', 1],
          [code, 0.4],
          [note, 0.6],
        ],
        0.3,
      ),
    );
  if (/\bmath\.floor\(|\/\//.test(code))
    facts.push(
      makeFact(
        `It rounds down${note ? `: ${note}` : ''}`,
        [
          ['round down floor whole', 1],
          [code, 0.4],
          [note, 0.6],
        ],
        0.3,
      ),
    );
  if (/\bint\(/.test(code) && /float|\./.test(code))
    facts.push(makeFact('Fractions are cut off with int()', [['round down whole truncate integer', 0.8]]));
  if ((m = /\b(sorted\(|\.sort\()(.*)$/.exec(code))) {
    const desc = /reverse\s*=\s*True/.test(m[2] as string);
    const key = /key\s*=\s*(lambda[^,)]*(?:\([^)]*\))?[^,)]*|[\w.]+)/.exec(m[2] as string)?.[1];
    facts.push(
      makeFact(
        `It sorts in ${desc ? 'descending' : 'ascending'} order${key ? `, by ${key}` : ''}${note ? ` (${note})` : ''}`,
        [
          ['sort', 1],
          [desc ? 'descend highest largest' : 'ascend lowest smallest', 0.8],
          [key ?? '', 0.6],
          [note, 0.6],
          [code, 0.5],
        ],
        0.3,
      ),
    );
  }
  if ((m = /\bmin\(([^,()]+),\s*([^()]+)\)/.exec(code)) && constants.has((m[2] as string).trim())) {
    facts.push(
      makeFact(
        `It never goes above ${constants.get((m[2] as string).trim())} (${humanName((m[2] as string).trim())})`,
        [
          ['max cap limit above', 0.8],
          [m[2] as string, 0.8],
        ],
        0.2,
      ),
    );
  }
  return facts;
}

function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let cur = '';
  for (const c of text) {
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth--;
    else if (c === ',' && depth === 0) {
      parts.push(cur.trim());
      cur = '';
      continue;
    }
    cur += c;
  }
  if (cur.trim()) parts.push(cur.trim());
  return parts;
}

function dictEntries(literal: string): [string, string][] {
  const t = literal.trim();
  if (!t.startsWith('{') || !t.endsWith('}')) return [];
  const entries: [string, string][] = [];
  for (const part of splitTopLevel(t.slice(1, -1))) {
    const m = /^(['"][^'"]*['"]|[\w.-]+)\s*:\s*(.+)$/.exec(part);
    if (m) entries.push([m[1] as string, m[2] as string]);
  }
  return entries.length <= 40 ? entries : [];
}
