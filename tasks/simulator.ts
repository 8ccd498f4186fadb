// The rule-based collaborator: answers the agent's latest question from the hidden reference only, the way
// ColBench's simulated human is told to (at most two sentences, "I don't know" when the reference does not say,
// replies cut to 400 characters for backend and 1,000 for frontend).
//
// Backend: the reference is cut into facts (named constants, dictionary entries, defaults, conditions with
// what they lead to, formulas, returns, rounding and sorting calls, comments), each with the words it is
// about; a question is matched to the facts by shared words weighted by rarity, and the best one or two are
// said in plain words. Frontend: a draft page is described by a pluggable screenshot comparison (see
// `describeVisualDifference`); questions are answered from the reference HTML's text (title, headings,
// colours, layout, images, buttons).
import type { ChatMessage, Collaborator } from './agent.ts';
import type { TaskContent } from './model.ts';
import { COLLABORATOR_REPLY_CAP, parseAgentMessage, MAX_AGENT_TURNS } from './protocol.ts';

export const DONT_KNOW = "I don't know.";
/** Longest single sentence we say; two of them and a space stay under the backend cap. */
const SENTENCE_CAP = 195;

export interface VisualDifferenceInput {
  referenceHtml: string;
  draftHtml: string;
  /** What the agent wrote along with its draft (may be empty). */
  question: string;
  signal?: AbortSignal;
}

export interface RuleSimulatorOptions {
  /**
   * Describes how a frontend draft differs from the reference as a person looking at both screenshots would
   * (e.g. render both, then tasks/visual-diff.ts `describeVisualDifferences`). Without it, drafts are compared
   * by their text (headings, colours, images).
   */
  describeVisualDifference?: (input: VisualDifferenceInput) => Promise<string>;
}

export function createRuleSimulator(task: TaskContent, options: RuleSimulatorOptions = {}): Collaborator {
  if (task.kind === 'backend') {
    const facts = backendFacts(task.reference);
    return {
      name: 'rule-simulator',
      async reply(dialogue) {
        return finish(answerFacts(facts, latestAgentMessage(dialogue)), COLLABORATOR_REPLY_CAP.backend);
      },
    };
  }
  const facts = frontendFacts(task.reference);
  return {
    name: 'rule-simulator',
    async reply(dialogue, opts) {
      const message = latestAgentMessage(dialogue);
      const turnIndex = Math.min(dialogue.filter((m) => m.role === 'assistant').length - 1, MAX_AGENT_TURNS - 2);
      const parsed = parseAgentMessage(message, { kind: 'frontend', turnIndex: Math.max(turnIndex, 0) });
      if (parsed.type === 'draft' && parsed.html) {
        const text = options.describeVisualDifference
          ? await options.describeVisualDifference({ referenceHtml: task.reference, draftHtml: parsed.html, question: parsed.text, ...(opts?.signal ? { signal: opts.signal } : {}) })
          : describeDraftByText(task.reference, parsed.html);
        return finish(text, COLLABORATOR_REPLY_CAP.frontend);
      }
      return finish(answerFacts(facts, message), COLLABORATOR_REPLY_CAP.frontend);
    },
  };
}

/** The backend answer to one agent message, from the reference code alone (exported for tests and tools). */
export function answerFromReference(reference: string, message: string): string {
  return finish(answerFacts(backendFacts(reference), message), COLLABORATOR_REPLY_CAP.backend);
}

/** The frontend answer to one agent question, from the reference page's text. */
export function answerFromHtml(html: string, message: string): string {
  return finish(answerFacts(frontendFacts(html), message), COLLABORATOR_REPLY_CAP.frontend);
}

function latestAgentMessage(dialogue: ChatMessage[]): string {
  for (let i = dialogue.length - 1; i >= 0; i--) {
    const m = dialogue[i];
    if (m && m.role === 'assistant') return m.content;
  }
  return '';
}

// ---------------------------------------------------------------------------------------------------------
// Sentences

/**
 * Splits text into sentences: a sentence ends at . ! or ? followed by white space or the end, except inside
 * quotes or backticks (a string literal like 'Hi! there' is one thing said, not two sentences).
 */
export function splitSentences(text: string): string[] {
  const out: string[] = [];
  let quote: string | null = null;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quote) {
      if (c === quote && text[i - 1] !== '\\') quote = null;
      continue;
    }
    // An apostrophe inside a word (don't, it's) is not a quote.
    if ((c === "'" || c === '"' || c === '`') && !(c === "'" && /\w/.test(text[i - 1] ?? '') && /\w/.test(text[i + 1] ?? ''))) {
      if (text.indexOf(c, i + 1) > i) quote = c;
      continue;
    }
    if ((c === '.' || c === '!' || c === '?') && (i + 1 >= text.length || /\s/.test(text[i + 1] as string))) {
      const s = text.slice(start, i + 1).trim();
      if (s) out.push(s);
      start = i + 1;
    }
  }
  const rest = text.slice(start).trim();
  if (rest) out.push(rest);
  return out;
}

/** At most two sentences, cut to the cap at a word boundary. */
function finish(text: string, cap: number): string {
  const sentences = splitSentences(text.trim()).slice(0, 2);
  let reply = sentences.join(' ');
  if (reply.length > cap) {
    const cut = reply.slice(0, cap - 1);
    const space = cut.lastIndexOf(' ');
    reply = (space > cap / 2 ? cut.slice(0, space) : cut) + '…';
  }
  return reply || DONT_KNOW;
}

function clip(sentence: string, max = SENTENCE_CAP): string {
  if (sentence.length <= max) return sentence;
  const cut = sentence.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return (space > max / 2 ? cut.slice(0, space) : cut) + '…';
}

/** One sentence: no inner sentence ends, first letter upper case, a full stop at the end. */
function sentence(text: string): string {
  let s = text.replace(/\s+/g, ' ').trim();
  // Comments and strings may hold several sentences; keep it one by softening inner stops.
  const parts = splitSentences(s);
  if (parts.length > 1) s = parts.map((p) => p.replace(/[.!?]$/, '')).join('; ');
  s = s.replace(/[.;:,\s]+$/, '');
  s = s.charAt(0).toUpperCase() + s.slice(1);
  return clip(/[!?]$/.test(s) ? s : `${s}.`);
}

// ---------------------------------------------------------------------------------------------------------
// Words

const STOP = new Set(
  `a an the is are was were be been being to of in on at for and or it its this that these those what which who whom how
  do does did doing should would could can may might must shall will i you we they he she me my your our their us them
  there here any some if with by from as much many function functions value values please when then than also about so
  just get gets got give gives need needs want wants like know tell thank thanks okay ok one each every all other into
  code python write writing wrote def else elif lambda self case exactly example e g eg use used using happen happens
  make makes made have has had where why whether kind type way thing things would like let let's i'm you're it's`
    .split(/\s+/)
    .filter(Boolean),
);

/** Words that say little on their own: they count, but weakly. */
const WEAK = new Set(['return', 'result', 'output', 'input', 'number', 'list', 'string', 'str', 'int', 'float', 'dict', 'len', 'true', 'false', 'none', 'not', 'new', 'name', 'data', 'item', 'amount', 'total', 'answer', 'arg', 'first']);

const CANONICAL: Record<string, string> = {
  minimum: 'min', maximum: 'max', least: 'min', most: 'max', lowest: 'min', highest: 'max', smallest: 'min', largest: 'max', biggest: 'max', fewest: 'min', cap: 'max', limit: 'max',
  percentage: 'percent', pct: 'percent', '%': 'percent',
  kilogram: 'kg', kilo: 'kg', kilogramme: 'kg', kgs: 'kg',
  metre: 'meter', kilometre: 'kilometer', km: 'kilometer',
  lowercase: 'lower', uppercase: 'upper', capital: 'upper',
  argument: 'arg', parameter: 'arg', param: 'arg', args: 'arg',
  decimal: 'decimal', digit: 'decimal', precision: 'decimal', place: 'decimal',
  rounding: 'round', rounded: 'round',
  descending: 'descend', ascending: 'ascend', sorted: 'sort', sorting: 'sort', order: 'sort', ordered: 'sort', rank: 'sort', ranked: 'sort',
  empty: 'empty', nothing: 'empty', blank: 'empty',
  cutoff: 'threshold', boundary: 'threshold', breakpoint: 'threshold',
  colour: 'color', colours: 'color', colors: 'color',
  photo: 'image', picture: 'image', img: 'image', pic: 'image',
  headline: 'heading', header: 'heading', h1: 'heading', h2: 'heading', h3: 'heading',
  navigation: 'nav', menu: 'nav',
  typeface: 'font',
};

const CANONICAL_TARGETS = new Set(Object.values(CANONICAL));

function stem(word: string): string {
  let w = word.toLowerCase();
  if (CANONICAL[w]) return CANONICAL[w] as string;
  if (CANONICAL_TARGETS.has(w)) return w;
  if (w.length > 4 && w.endsWith('ies')) w = w.slice(0, -3) + 'y';
  else if (w.length > 4 && w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us') && !w.endsWith('is')) w = w.slice(0, -1);
  if (CANONICAL[w]) return CANONICAL[w] as string;
  if (w.length > 6 && w.endsWith('ing')) w = w.slice(0, -3);
  else if (w.length > 4 && w.endsWith('ed')) w = w.slice(0, -2);
  if (w.length > 3 && w.endsWith('e')) w = w.slice(0, -1);
  return CANONICAL[w] ?? w;
}

/** Words of a text or identifier: camelCase and snake_case split, stemmed, stop words dropped. */
export function keywords(text: string): string[] {
  const spaced = text.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/%/g, ' percent ');
  const raw = spaced.match(/[A-Za-z]+|\d+(?:\.\d+)?/g) ?? [];
  const out: string[] = [];
  for (const r of raw) {
    const lower = r.toLowerCase();
    if (STOP.has(lower)) continue;
    const s = /^\d/.test(r) ? r : stem(r);
    if (s && !STOP.has(s)) out.push(s);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Facts and matching

interface Fact {
  text: string;
  /** token -> how central it is to the fact (1 = its name, less for surrounding words). */
  tokens: Map<string, number>;
  /** Facts that carry a concrete value are preferred when scores tie. */
  bonus: number;
}

function addTokens(tokens: Map<string, number>, words: string[], weight: number): void {
  for (const w of words) tokens.set(w, Math.max(tokens.get(w) ?? 0, weight));
}

function makeFact(text: string, parts: [string, number][], bonus = 0): Fact {
  const tokens = new Map<string, number>();
  for (const [t, w] of parts) addTokens(tokens, keywords(t), w);
  return { text: sentence(text), tokens, bonus };
}

/** The questions in a message: split at question marks; a message without one is a single request. */
function questionsOf(message: string): string[] {
  const cleaned = message.replace(/```[\s\S]*?```/g, ' ');
  const parts = cleaned.split(/\?/).map((s) => s.trim()).filter((s) => keywords(s).length > 0);
  return parts.length > 0 ? parts.slice(0, 4) : [];
}

function answerFacts(facts: Fact[], message: string): string {
  if (facts.length === 0) return DONT_KNOW;
  const df = new Map<string, number>();
  for (const f of facts) for (const t of f.tokens.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  const idf = (t: string) => Math.log(1 + facts.length / (df.get(t) ?? facts.length));

  const chosen: Fact[] = [];
  let unanswered = 0;
  for (const q of questionsOf(message)) {
    const qTokens = [...new Set(keywords(q))];
    let best: { fact: Fact; score: number } | undefined;
    let second: { fact: Fact; score: number } | undefined;
    for (const fact of facts) {
      let score = 0;
      let strong = false;
      for (const t of qTokens) {
        const w = fact.tokens.get(t);
        if (w === undefined) continue;
        const weak = WEAK.has(t);
        if (!weak) strong = true;
        score += idf(t) * w * (weak ? 0.3 : 1);
      }
      if (!strong || score < 0.25) continue;
      score += fact.bonus;
      if (!best || score > best.score) {
        second = best;
        best = { fact, score };
      } else if (!second || score > second.score) {
        second = { fact, score };
      }
    }
    if (!best) {
      unanswered++;
      continue;
    }
    if (!chosen.includes(best.fact)) chosen.push(best.fact);
    // A near tie usually means the question covers two facts (both cutoffs, both units).
    if (second && second.score >= 0.9 * best.score && !chosen.includes(second.fact)) chosen.push(second.fact);
  }
  if (chosen.length === 0) return DONT_KNOW;
  const said = chosen.slice(0, 2).map((f) => f.text);
  if (said.length === 1 && unanswered > 0) said.push("I don't know about the rest.");
  return said.join(' ');
}

// ---------------------------------------------------------------------------------------------------------
// Python reference -> facts

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

/** Words from a name: DISCOUNT_THRESHOLD -> "discount threshold". */
function humanName(name: string): string {
  return name.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/_+/g, ' ').trim().toLowerCase();
}

const LITERAL = /^(?:-?\d[\d_]*(?:\.\d+)?(?:e-?\d+)?|True|False|None|'[^']*'|"[^"]*"|[[({][\s\S]*[\])}])$/;

/** A literal worth quoting (numbers, strings, booleans, containers without calls). */
function isLiteral(expr: string): boolean {
  if (!LITERAL.test(expr.trim())) return false;
  return !/[A-Za-z_]\w*\s*\(/.test(expr.replace(/'[^']*'|"[^"]*"/g, '')) && !/\bfor\b/.test(expr.replace(/'[^']*'|"[^"]*"/g, ''));
}

/** Comparison operators in words, constants replaced by their values (so "score >= PASS_MIN" says the number). */
function plainCondition(expr: string, constants: Map<string, string>): string {
  // "ROUNDING == 'up'" is a switch, not a comparison with the constant's value: keep the name in words.
  let s = expr.replace(/\b([A-Z][A-Z0-9_]*)\s*(==|!=)\s*('[^']*'|"[^"]*"|-?\d+(?:\.\d+)?|True|False)/g, (_all, name: string, op: string, lit: string) => `${humanName(name)} ${op} ${lit}`);
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
    const verb = { '+': 'increases by', '-': 'decreases by', '*': 'is multiplied by', '/': 'is divided by' }[m[2] as '+'];
    return `${m[1]} ${verb} ${withValues(m[3] as string, constants)}`;
  }
  if ((m = /^([\w.[\]'", ]+?)\s*=\s*(.+)$/.exec(code))) return `${m[1]} becomes ${withValues(m[2] as string, constants)}`;
  return code;
}

function withValues(expr: string, constants: Map<string, string>): string {
  const replaced = expr.replace(/\b[A-Z][A-Z0-9_]*\b/g, (name) => constants.get(name) ?? name);
  return replaced.length > 120 ? expr : replaced;
}

function backendFacts(reference: string): Fact[] {
  // `def f(x): return x` written on one line is two statements.
  const lines = logicalLines(reference).flatMap((l) => {
    const m = /^((?:async\s+)?def\s+\w+\s*\(.*\)\s*(?:->[^:]*)?:)\s*(\S.*)$/.exec(l.code);
    return m ? [{ ...l, code: m[1] as string, comment: '' }, { indent: l.indent + 4, code: m[2] as string, comment: l.comment, leading: [] }] : [l];
  });
  const facts: Fact[] = [];
  // Module- or function-level names bound to literals, so conditions can say the number instead of the name.
  const constants = new Map<string, string>();
  for (const l of lines) {
    const m = /^([A-Za-z_]\w*)\s*=\s*(.+)$/.exec(l.code);
    if (m && isLiteral(m[2] as string) && (m[2] as string).length <= 60) constants.set(m[1] as string, (m[2] as string).trim());
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

    for (const c of line.leading) facts.push(makeFact(c, [[c, 0.8], [code, 0.4]]));

    if ((m = /^(?:async\s+)?def\s+(\w+)\s*\((.*)\)\s*(?:->.*)?:$/.exec(code))) {
      const params = splitTopLevel(m[2] as string);
      const described = params.map((p) => p.split('=')[0]?.replace(/:.*$/, '').trim() ?? '').filter((p) => p && p !== 'self');
      facts.push(makeFact(`The function ${m[1]} takes ${described.join(', ') || 'no arguments'}, in that order${note ? ` (${note})` : ''}`, [[m[1] as string, 0.5], [described.join(' '), 0.5], ['argument order', 0.6], [note, 0.8]]));
      for (const p of params) {
        const d = /^\s*(\w+)\s*(?::[^=]+)?=\s*(.+)$/.exec(p);
        if (d) facts.push(makeFact(`If ${d[1]} is not given, it defaults to ${d[2]}`, [[d[1] as string, 1], ['default optional', 1]], 0.2));
      }
      return;
    }
    if (/^(?:class|import|from)\b/.test(code)) return;
    if (/^(?:"""|''')/.test(code) && /(?:"""|''')$/.test(code)) {
      const text = code.replace(/^(?:"""|''')|(?:"""|''')$/g, '').trim();
      if (text) facts.push(makeFact(text, [[text, 0.8]]));
      return;
    }

    if ((m = /^(if|elif|while)\s+(.+?):\s*(\S.*)?$/.exec(code)) && !/^(?:if|elif|while)\s.*\blambda\b[^:]*$/.test(m[2] as string)) {
      const cond = m[2] as string;
      blockCondition[line.indent] = cond;
      const inline = m[3];
      const what = inline ? plainStatement(inline, constants) : body ? plainStatement(body.code, constants) : '';
      const lead = m[1] === 'while' ? 'While' : 'If';
      const extra = [note, body?.comment].filter(Boolean).join('; ');
      // Constants named in a condition belong to their own fact first; here they count for less.
      const ownWords = cond.replace(/\b[A-Z][A-Z0-9_]*\b/g, ' ');
      const constNames = (cond.match(/\b[A-Z][A-Z0-9_]*\b/g) ?? []).join(' ');
      facts.push(makeFact(`${lead} ${plainCondition(cond, constants)}, ${what}${extra ? ` (${extra})` : ''}`, [[ownWords, 1], [constNames, 0.5], [constNames.split(' ').filter((n) => !alternatives.has(n)).map((n) => constants.get(n) ?? '').join(' '), 0.8], [inline ?? body?.code ?? '', 0.7], [extra, 0.9], [conditionWords(cond), 0.6]], 0.3));
      return;
    }
    if ((m = /^else\s*:\s*(\S.*)?$/.exec(code))) {
      const cond = blockCondition[line.indent];
      const what = m[1] ? plainStatement(m[1], constants) : body ? plainStatement(body.code, constants) : '';
      facts.push(makeFact(`Otherwise${cond ? ` (when not ${plainCondition(cond, constants)})` : ''}, ${what}`, [[cond ?? '', 0.6], [body?.code ?? '', 0.7], [note, 0.9]], 0.1));
      return;
    }
    if ((m = /^for\s+(.+?)\s+in\s+(.+):$/.exec(code))) {
      facts.push(makeFact(`It goes through each ${m[1]} in ${m[2]}${note ? ` (${note})` : ''}`, [[code, 0.6], [note, 0.9]]));
    } else if ((m = /^([A-Za-z_][\w.]*)\s*=\s*(.+)$/.exec(code)) && !/^[\w.]+\s*==/.test(code)) {
      const name = m[1] as string;
      const rhs = (m[2] as string).trim();
      if (line.indent > 0 && /^(?:0|0\.0|\[\]|\{\}|''|""|None|set\(\)|False|True)$/.test(rhs)) {
        // An accumulator starting value says little about what the function means.
        facts.push(makeFact(`${name} starts as ${rhs}${note ? ` (${note})` : ''}`, [[name, 0.5], [note, 0.7]], -0.2));
      } else if (isLiteral(rhs)) {
        const value = rhs.length > 150 ? `${rhs.slice(0, 147)}…` : rhs;
        facts.push(makeFact(`The ${humanName(name)} is ${value}${note ? ` (${note})` : ''}`, [[name, 1], [note, 0.8], [rhs, 0.5], [(alternatives.get(name) ?? []).join(' '), 0.5]], 0.5));
        for (const [k, v] of dictEntries(rhs)) {
          facts.push(makeFact(`For ${k}, the ${humanName(name)} is ${v}`, [[k, 1], [name, 0.7], [note, 0.5]], 0.5));
        }
      } else {
        facts.push(makeFact(`The ${humanName(name)} is ${withValues(rhs, constants)}${note ? ` (${note})` : ''}`, [[name, 1], [rhs, 0.6], [note, 0.8]], 0.2));
      }
    } else if ((m = /^return\s+(.+)$/.exec(code))) {
      const cond = blockCondition[line.indent - 4] ?? '';
      facts.push(makeFact(`It returns ${withValues(m[1] as string, constants)}${note ? ` (${note})` : ''}`, [['return', 0.5], [m[1] as string, 0.8], [note, 0.9], [cond, 0.3]], 0.1));
    } else if (note) {
      facts.push(makeFact(note, [[note, 0.9], [code, 0.5]]));
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
    facts.push(makeFact(`The result is rounded to ${places} decimal places${note ? ` (${note})` : ''}`, [['round decimal', 1], [m[2] as string, 0.8], [m[1] as string, 0.4], [note, 0.6]], 0.4));
  }
  if (/\bround\([^,()]*(?:\([^()]*\)[^,()]*)*\)/.test(code)) facts.push(makeFact('The result is rounded to a whole number', [['round whole decimal integer', 1]], 0.2));
  if (/\bmath\.ceil\(/.test(code)) facts.push(makeFact(`It rounds up (math.ceil)${note ? `: ${note}` : ''}`, [['round up ceil', 1], [code, 0.4], [note, 0.6]], 0.3));
  if (/\bmath\.floor\(|\/\//.test(code)) facts.push(makeFact(`It rounds down${note ? `: ${note}` : ''}`, [['round down floor whole', 1], [code, 0.4], [note, 0.6]], 0.3));
  if (/\bint\(/.test(code) && /float|\./.test(code)) facts.push(makeFact('Fractions are cut off with int()', [['round down whole truncate integer', 0.8]]));
  if ((m = /\b(sorted\(|\.sort\()(.*)$/.exec(code))) {
    const desc = /reverse\s*=\s*True/.test(m[2] as string);
    const key = /key\s*=\s*(lambda[^,)]*(?:\([^)]*\))?[^,)]*|[\w.]+)/.exec(m[2] as string)?.[1];
    facts.push(makeFact(`It sorts in ${desc ? 'descending' : 'ascending'} order${key ? `, by ${key}` : ''}${note ? ` (${note})` : ''}`, [['sort', 1], [desc ? 'descend highest largest' : 'ascend lowest smallest', 0.8], [key ?? '', 0.6], [note, 0.6], [code, 0.5]], 0.3));
  }
  if ((m = /\bmin\(([^,()]+),\s*([^()]+)\)/.exec(code)) && constants.has((m[2] as string).trim())) {
    facts.push(makeFact(`It never goes above ${constants.get((m[2] as string).trim())} (${humanName((m[2] as string).trim())})`, [['max cap limit above', 0.8], [m[2] as string, 0.8]], 0.2));
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

// ---------------------------------------------------------------------------------------------------------
// Reference HTML -> facts

/** The text a page shows, tags dropped and white space collapsed. */
export function stripTags(html: string): string {
  return html.replace(/<[^>]*>/g, ' ').replace(/&nbsp;/g, ' ').replace(/&amp;/g, '&').replace(/&middot;/g, '·').replace(/&#?\w+;/g, ' ').replace(/\s+/g, ' ').trim();
}

interface Element {
  tag: string;
  classes: string[];
  text: string;
  inner: string;
  attrs: string;
}

function elements(html: string, tags: string): Element[] {
  const out: Element[] = [];
  const re = new RegExp(`<(${tags})\\b([^>]*)>([\\s\\S]*?)</\\1>`, 'gi');
  let m: RegExpExecArray | null;
  while ((m = re.exec(html))) {
    const attrs = m[2] ?? '';
    out.push({ tag: (m[1] as string).toLowerCase(), classes: (/class="([^"]*)"/.exec(attrs)?.[1] ?? '').split(/\s+/).filter(Boolean), text: stripTags(m[3] ?? ''), inner: m[3] ?? '', attrs });
  }
  return out;
}

const COLOR_CLASS = /^(bg|text|from|to|via|border)-(white|black|transparent|(?:gray|red|yellow|green|blue|indigo|purple|pink|orange|teal|cyan|lime|amber|emerald|sky|violet|fuchsia|rose|slate|zinc|neutral|stone)-\d{2,3})$/;

/** The colours a page's classes name, as a person says them (Tailwind's bg-blue-500 is "blue"). */
export function pageColours(html: string): string[] {
  const classes = [...html.matchAll(/class="([^"]*)"/g)].flatMap((m) => (m[1] ?? '').split(/\s+/));
  return [...new Set(classes.map((c) => COLOR_CLASS.exec(c)?.[2]?.replace(/-\d+$/, '')).filter((c): c is string => !!c))];
}

function colourWords(classes: string[]): string[] {
  const out: string[] = [];
  for (const c of classes) {
    const m = COLOR_CLASS.exec(c);
    if (!m) continue;
    const [, role, colour] = m;
    const shade = /-(\d+)$/.exec(colour as string)?.[1];
    const base = (colour as string).replace(/-\d+$/, '');
    const tone = shade === undefined ? '' : Number(shade) <= 200 ? 'light ' : Number(shade) >= 700 ? 'dark ' : '';
    const where = role === 'bg' || role === 'from' || role === 'to' || role === 'via' ? 'background' : role === 'text' ? 'text' : 'border';
    out.push(`${tone}${base} ${where}`);
  }
  return [...new Set(out)];
}

function frontendFacts(html: string): Fact[] {
  const facts: Fact[] = [];
  const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html)?.[1]?.trim();
  if (title) facts.push(makeFact(`The page is called "${stripTags(title)}"`, [['title name call brand page site', 1], [title, 0.8]], 0.3));

  const body = /<body\b([^>]*)>/i.exec(html)?.[1] ?? '';
  const bodyClasses = (/class="([^"]*)"/.exec(body)?.[1] ?? '').split(/\s+/).filter(Boolean);
  const bodyColours = colourWords(bodyClasses);
  if (bodyColours.length) facts.push(makeFact(`The page overall has ${bodyColours.join(' and ')}`, [['color background theme page overall text main', 1], [bodyColours.join(' '), 0.8]], 0.3));
  const fonts = bodyClasses.filter((c) => /^font-(serif|sans|mono)$/.test(c));
  if (fonts.length) facts.push(makeFact(`The text uses a ${fonts[0]?.replace('font-', '')} font`, [['font text style', 1]], 0.2));

  const headings = elements(html, 'h1|h2|h3');
  const h1 = headings.find((h) => h.tag === 'h1');
  if (h1) facts.push(makeFact(`The main heading says "${h1.text}"`, [['heading main title big top text say', 1], [h1.text, 0.8]], 0.4));
  const subs = headings.filter((h) => h.tag !== 'h1').map((h) => `"${h.text}"`);
  if (subs.length) facts.push(makeFact(`The section headings are ${subs.slice(0, 6).join(', ')}`, [['heading section titles', 1], [subs.join(' '), 0.7]], 0.2));

  const blocks = elements(html, 'header|nav|section|main|footer|article');
  const top = blocks.filter((b) => ['header', 'nav', 'section', 'main', 'footer'].includes(b.tag));
  if (top.length) {
    const layout = top.map((b) => {
      const grid = b.classes.find((c) => /^grid-cols-\d+$/.test(c));
      return grid ? `a ${b.tag} with ${grid.replace('grid-cols-', '')} columns` : `a ${b.tag}`;
    });
    facts.push(makeFact(`From top to bottom there is ${layout.slice(0, 6).join(', ')}`, [['layout structure column grid arrange organise organize', 1], ['section part order top bottom', 0.7]], 0.3));
  }
  for (const b of top) {
    const colours = colourWords(b.classes);
    if (colours.length) facts.push(makeFact(`The ${b.tag} has ${colours.join(' and ')}`, [[b.tag, 1], ['color background', 0.8], [colours.join(' '), 0.7]], 0.2));
  }
  const nav = elements(html, 'nav')[0];
  if (nav) {
    const links = elements(nav.inner, 'a').slice(0, 6).map((a) => `"${a.text}"`);
    if (links.length) facts.push(makeFact(`The navigation links are ${links.join(', ')}`, [['nav link', 1]], 0.3));
  }
  const images = [...html.matchAll(/<img\b[^>]*>/gi)].map((m) => m[0]);
  if (images.length) {
    const alts = images.map((i) => /alt="([^"]*)"/.exec(i)?.[1]).filter(Boolean).slice(0, 4);
    const round = images.some((i) => /rounded-full/.test(i));
    facts.push(makeFact(`There ${images.length === 1 ? 'is one picture' : `are ${images.length} pictures`}${alts.length ? ` (${alts.join(', ')})` : ''}${round ? ', some of them round' : ''}`, [['image many count where', 1], [alts.join(' '), 0.6]], 0.3));
  }
  const buttons = [...elements(html, 'button'), ...elements(html, 'a').filter((a) => a.classes.some((c) => c.startsWith('bg-') || c.startsWith('border')))];
  if (buttons.length) {
    const colours = colourWords(buttons[0]?.classes ?? []);
    facts.push(makeFact(`The buttons say ${[...new Set(buttons.map((b) => `"${b.text}"`))].slice(0, 4).join(', ')}${colours.length ? `, with ${colours.join(' and ')}` : ''}`, [['button call action link click', 1], [buttons.map((b) => b.text).join(' '), 0.6]], 0.3));
  }
  for (const e of elements(html, 'p|li|td|span|blockquote|h1|h2|h3|h4|a|button')) {
    if (e.text.length >= 3 && e.text.length <= 160) facts.push(makeFact(`There is a ${e.tag === 'a' ? 'link' : e.tag} saying "${e.text}"`, [[e.text, 0.8]]));
  }
  return facts;
}

/** Without screenshots: what a person would notice first, from the two pages' text. */
function describeDraftByText(referenceHtml: string, draftHtml: string): string {
  const notes: string[] = [];
  const refH1 = elements(referenceHtml, 'h1')[0]?.text;
  const draftText = stripTags(draftHtml).toLowerCase();
  if (refH1 && !draftText.includes(refH1.toLowerCase())) notes.push(`The main heading should say "${refH1}"`);
  const refColours = colourWords((/<body\b[^>]*class="([^"]*)"/i.exec(referenceHtml)?.[1] ?? '').split(/\s+/));
  const draftColours = colourWords((/<body\b[^>]*class="([^"]*)"/i.exec(draftHtml)?.[1] ?? '').split(/\s+/));
  if (refColours.length && refColours.join() !== draftColours.join()) notes.push(`The page should have ${refColours.join(' and ')}`);
  const refImages = (referenceHtml.match(/<img\b/gi) ?? []).length;
  const draftImages = (draftHtml.match(/<img\b/gi) ?? []).length;
  if (refImages !== draftImages) notes.push(`I want ${refImages === 0 ? 'no pictures' : refImages === 1 ? 'one picture' : `${refImages} pictures`}, not ${draftImages}`);
  const refSections = elements(referenceHtml, 'h2|h3').map((h) => h.text).filter((t) => !draftText.includes(t.toLowerCase()));
  if (refSections.length) notes.push(`It is missing the part "${refSections[0]}"`);
  if (notes.length === 0) return 'That looks close to what I have in mind.';
  return notes.slice(0, 2).map((n) => sentence(n)).join(' ');
}
