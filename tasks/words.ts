// How the rule-based collaborator (simulator.ts) and the expert (expert.ts) read and write text: sentences
// (split outside quotes, one clipped sentence said at a time) and keywords (camelCase and snake_case split,
// stemmed, synonyms folded to one word, stop words dropped).

/** Longest single sentence we say; two of them and a space stay under the backend cap. */
const SENTENCE_CAP = 195;

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
    if (
      (c === "'" || c === '"' || c === '`') &&
      !(c === "'" && /\w/.test(text[i - 1] ?? '') && /\w/.test(text[i + 1] ?? ''))
    ) {
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

function clip(sentence: string, max = SENTENCE_CAP): string {
  if (sentence.length <= max) return sentence;
  const cut = sentence.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return (space > max / 2 ? cut.slice(0, space) : cut) + '…';
}

/** One sentence: no inner sentence ends, first letter upper case, a full stop at the end. */
export function sentence(text: string): string {
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
export const WEAK = new Set([
  'return',
  'result',
  'output',
  'input',
  'number',
  'list',
  'string',
  'str',
  'int',
  'float',
  'dict',
  'len',
  'true',
  'false',
  'none',
  'not',
  'new',
  'name',
  'data',
  'item',
  'amount',
  'total',
  'answer',
  'arg',
  'first',
]);

const CANONICAL: Record<string, string> = {
  minimum: 'min',
  maximum: 'max',
  least: 'min',
  most: 'max',
  lowest: 'min',
  highest: 'max',
  smallest: 'min',
  largest: 'max',
  biggest: 'max',
  fewest: 'min',
  cap: 'max',
  limit: 'max',
  percentage: 'percent',
  pct: 'percent',
  '%': 'percent',
  kilogram: 'kg',
  kilo: 'kg',
  kilogramme: 'kg',
  kgs: 'kg',
  metre: 'meter',
  kilometre: 'kilometer',
  km: 'kilometer',
  lowercase: 'lower',
  uppercase: 'upper',
  capital: 'upper',
  argument: 'arg',
  parameter: 'arg',
  param: 'arg',
  args: 'arg',
  decimal: 'decimal',
  digit: 'decimal',
  precision: 'decimal',
  place: 'decimal',
  rounding: 'round',
  rounded: 'round',
  descending: 'descend',
  ascending: 'ascend',
  sorted: 'sort',
  sorting: 'sort',
  order: 'sort',
  ordered: 'sort',
  rank: 'sort',
  ranked: 'sort',
  empty: 'empty',
  nothing: 'empty',
  blank: 'empty',
  cutoff: 'threshold',
  boundary: 'threshold',
  breakpoint: 'threshold',
  colour: 'color',
  colours: 'color',
  colors: 'color',
  photo: 'image',
  picture: 'image',
  img: 'image',
  pic: 'image',
  headline: 'heading',
  header: 'heading',
  h1: 'heading',
  h2: 'heading',
  h3: 'heading',
  navigation: 'nav',
  menu: 'nav',
  typeface: 'font',
};

const CANONICAL_TARGETS = new Set(Object.values(CANONICAL));

function stem(word: string): string {
  let w = word.toLowerCase();
  if (CANONICAL[w]) return CANONICAL[w] as string;
  if (CANONICAL_TARGETS.has(w)) return w;
  if (w.length > 4 && w.endsWith('ies')) w = w.slice(0, -3) + 'y';
  else if (w.length > 4 && w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us') && !w.endsWith('is'))
    w = w.slice(0, -1);
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
