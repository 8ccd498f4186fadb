// Python values as the backend harness (tasks/backend-harness.py, `_Encoder`) writes them, read back here:
//   decodePyValue  a bounded, total decoder: whatever a sandboxed program wrote, the answer is a value or an
//                  error string, never an exception (no BigInt parse, recursion stops at a fixed depth, node
//                  and character budgets, duplicate set members or dict keys refused);
//   pyEqual        Python's == on decoded values;
//   pyRepr         a short Python-style repr, what the stored test detail shows: the value that was compared.
//
// Wire format: null, true/false, a JSON integer (|n| < 2^53), a JSON string (str), or a tagged array:
// ['int', digits], ['float', repr(x)], ['complex', float, float], ['bytes', hex], ['list'|'tuple'|'set', ...items],
// ['dict', [key, value]...], ['obj', module.qualname, repr(x)] for anything else (equal iff same type and repr).

export type PyValue =
  | { t: 'none' }
  | { t: 'bool'; v: boolean }
  | { t: 'int'; v: string } // canonical decimal digits
  | { t: 'float'; v: number }
  | { t: 'complex'; re: number; im: number }
  | { t: 'str'; v: string }
  | { t: 'bytes'; hex: string }
  | { t: 'list' | 'tuple' | 'set'; items: PyValue[] }
  | { t: 'dict'; items: [PyValue, PyValue][] }
  | { t: 'obj'; type: string; repr: string };

export interface DecodeLimits {
  /** Values in all (each container, key and item counts one). */
  maxNodes: number;
  /** Characters of str, int digits, bytes hex and obj text together. */
  maxChars: number;
  /** Containers nested in one another. */
  maxDepth: number;
}

class Malformed extends Error {}

const INT = /^-?(0|[1-9][0-9]*)$/;
const FLOAT = /^-?(inf|nan|[0-9]+(\.[0-9]+)?(e[+-][0-9]+)?)$/;
const HEX = /^([0-9a-f]{2})*$/;

/** Decodes one value as written by the harness: the value, or why it is malformed. */
export function decodePyValue(raw: unknown, limits: DecodeLimits): { value: PyValue } | { error: string } {
  let nodes = limits.maxNodes;
  let chars = limits.maxChars;
  const spend = (n: number): void => {
    nodes -= 1;
    chars -= n;
    if (nodes < 0 || chars < 0) throw new Malformed('value too large');
  };
  const text = (x: unknown): string => {
    if (typeof x !== 'string') throw new Malformed('expected a string');
    spend(x.length);
    return x;
  };
  const float = (x: unknown): number => {
    if (!Array.isArray(x) || x.length !== 2 || x[0] !== 'float') throw new Malformed('expected a float');
    const s = text(x[1]);
    if (!FLOAT.test(s)) throw new Malformed(`bad float ${s.slice(0, 40)}`);
    const sign = s.startsWith('-') ? -1 : 1;
    const body = sign < 0 ? s.slice(1) : s;
    return body === 'nan' ? NaN : body === 'inf' ? sign * Infinity : Number(s);
  };
  const dec = (x: unknown, depth: number): PyValue => {
    if (depth > limits.maxDepth) throw new Malformed('nested too deeply');
    if (x === null) return (spend(0), { t: 'none' });
    if (typeof x === 'boolean') return (spend(0), { t: 'bool', v: x });
    if (typeof x === 'number') {
      if (!Number.isSafeInteger(x)) throw new Malformed('a JSON number that is not a safe integer');
      spend(0);
      return { t: 'int', v: String(x === 0 ? 0 : x) };
    }
    if (typeof x === 'string') return { t: 'str', v: text(x) };
    if (!Array.isArray(x) || x.length === 0) throw new Malformed('expected a value');
    const [tag, ...rest] = x as unknown[];
    switch (tag) {
      case 'int': {
        const s = rest.length === 1 ? text(rest[0]) : '';
        if (!INT.test(s)) throw new Malformed(`bad int ${s.slice(0, 40)}`);
        return { t: 'int', v: s === '-0' ? '0' : s };
      }
      case 'float':
        return { t: 'float', v: float(x) };
      case 'complex':
        if (rest.length !== 2) throw new Malformed('bad complex');
        spend(0);
        return { t: 'complex', re: float(rest[0]), im: float(rest[1]) };
      case 'bytes': {
        const hex = rest.length === 1 ? text(rest[0]) : '';
        if (!HEX.test(hex)) throw new Malformed('bad bytes');
        return { t: 'bytes', hex };
      }
      case 'list':
      case 'tuple':
      case 'set': {
        spend(0);
        const items = rest.map((e) => dec(e, depth + 1));
        if (tag === 'set' && new Set(items.map(hashKey)).size !== items.length)
          throw new Malformed('a set with equal members');
        return { t: tag, items };
      }
      case 'dict': {
        spend(0);
        const items = rest.map((kv): [PyValue, PyValue] => {
          if (!Array.isArray(kv) || kv.length !== 2) throw new Malformed('bad dict item');
          return [dec(kv[0], depth + 1), dec(kv[1], depth + 1)];
        });
        if (new Set(items.map(([k]) => hashKey(k))).size !== items.length)
          throw new Malformed('a dict with equal keys');
        return { t: 'dict', items };
      }
      case 'obj':
        if (rest.length !== 2) throw new Malformed('bad object');
        return { t: 'obj', type: text(rest[0]), repr: text(rest[1]) };
      default:
        throw new Malformed('unknown tag');
    }
  };
  try {
    return { value: dec(raw, 0) };
  } catch (e) {
    if (e instanceof Malformed) return { error: e.message };
    throw e;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Python's ==. Numbers (bool, int, float, complex) compare by value across types, exactly (2**53 + 1 != 2.0**53);
// nan equals nothing; list != tuple; dict and set ignore order; other types are equal iff same type and repr.

type Real = { int: string } | { float: number };

function asNumber(v: PyValue): { re: Real; im: number } | null {
  switch (v.t) {
    case 'bool':
      return { re: { int: v.v ? '1' : '0' }, im: 0 };
    case 'int':
      return { re: { int: v.v }, im: 0 };
    case 'float':
      return { re: { float: v.v }, im: 0 };
    case 'complex':
      return { re: { float: v.re }, im: v.im };
    default:
      return null;
  }
}

/** A real number's exact integer digits where it is an integer, else null. */
function intDigits(r: Real): string | null {
  if ('int' in r) return r.int;
  return Number.isInteger(r.float) ? BigInt(r.float).toString() : null;
}

function realEqual(a: Real, b: Real): boolean {
  if ('float' in a && 'float' in b) return a.float === b.float;
  const da = intDigits(a);
  return da !== null && da === intDigits(b);
}

export function pyEqual(a: PyValue, b: PyValue): boolean {
  const na = asNumber(a);
  const nb = asNumber(b);
  if (na || nb) return !!na && !!nb && realEqual(na.re, nb.re) && na.im === nb.im;
  if (a.t !== b.t) return false;
  switch (a.t) {
    case 'none':
      return true;
    case 'str':
      return a.v === (b as typeof a).v;
    case 'bytes':
      return a.hex === (b as typeof a).hex;
    case 'obj':
      return a.type === (b as typeof a).type && a.repr === (b as typeof a).repr;
    case 'list':
    case 'tuple': {
      const bi = (b as typeof a).items;
      return a.items.length === bi.length && a.items.every((x, i) => pyEqual(x, bi[i]!));
    }
    case 'set': {
      const bi = (b as typeof a).items;
      if (a.items.length !== bi.length) return false;
      const keys = new Set(a.items.map(hashKey));
      return bi.every((x) => keys.has(hashKey(x)));
    }
    case 'dict': {
      const bi = (b as typeof a).items;
      if (a.items.length !== bi.length) return false;
      const index = new Map(a.items.map(([k, v]) => [hashKey(k), v]));
      return bi.every(([k, v]) => {
        const mine = index.get(hashKey(k));
        return mine !== undefined && pyEqual(mine, v);
      });
    }
    default:
      return false;
  }
}

let nanSeq = 0;

/** A string equal for Python-equal hashable values: dict keys and set members are matched by it. */
function hashKey(v: PyValue): string {
  const n = asNumber(v);
  if (n) {
    const part = (r: Real): string => {
      const digits = intDigits(r);
      if (digits !== null) return digits;
      const f = (r as { float: number }).float;
      // nan is never equal to another nan: each gets a key of its own.
      return Number.isNaN(f) ? `nan#${++nanSeq}` : String(f);
    };
    return n.im === 0 ? `n:${part(n.re)}` : `c:${part(n.re)},${part({ float: n.im })}`;
  }
  switch (v.t) {
    case 'none':
      return 'None';
    case 'str':
      return `s:${JSON.stringify(v.v)}`;
    case 'bytes':
      return `b:${v.hex}`;
    case 'tuple':
    case 'list':
      return `${v.t}(${v.items.map(hashKey).join(',')})`;
    case 'set':
      return `set{${v.items.map(hashKey).sort().join(',')}}`;
    case 'dict':
      return `dict{${v.items
        .map(([k, x]) => `${hashKey(k)}:${hashKey(x)}`)
        .sort()
        .join(',')}}`;
    case 'obj':
      return `o:${JSON.stringify([v.type, v.repr])}`;
    default:
      return 'unreachable';
  }
}

// ---------------------------------------------------------------------------------------------------------
// repr, shortened the way Python's reprlib does (12 items a container, 4 levels, 120 characters a string; dict
// keys and set members sorted where Python could sort them).

const MAX_ITEMS = 12;
const MAX_LEVEL = 4;
const MAX_STRING = 120;
const MAX_INT = 40;

/** Python's repr() of a float (shortest round-trip digits; exponent below 1e-4 and from 1e16). */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const sign = x < 0 ? '-' : '';
  const [mantissa, exp] = Math.abs(x).toExponential().split('e') as [string, string];
  const digits = mantissa.replace('.', '');
  const e = Number(exp);
  const point = e + 1; // digits are 0.d1d2... x 10^point
  if (point <= -4 || point > 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}.0`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

function elide(s: string, max: number): string {
  if (s.length <= max) return s;
  const i = Math.max(0, Math.floor((max - 3) / 2));
  const j = Math.max(0, max - 3 - i);
  return `${s.slice(0, i)}...${s.slice(s.length - j)}`;
}

const PRINTABLE = /[\p{L}\p{M}\p{N}\p{P}\p{S} ]/u;

function quote(body: string, bytes: boolean): string {
  const q = body.includes("'") && !body.includes('"') ? '"' : "'";
  let out = '';
  for (const ch of body) {
    const code = ch.codePointAt(0)!;
    if (ch === q || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (bytes ? code >= 0x20 && code < 0x7f : PRINTABLE.test(ch)) out += ch;
    else if (code < 0x100) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else if (code < 0x10000) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += `\\U${code.toString(16).padStart(8, '0')}`;
  }
  return `${bytes ? 'b' : ''}${q}${out}${q}`;
}

/** reprlib's cut of a quoted string: the head and tail of the text, quoted, then cut to `max`. */
function quoteShort(text: string, bytes: boolean): string {
  const whole = quote(text.slice(0, MAX_STRING), bytes);
  if (whole.length <= MAX_STRING) return whole;
  const i = Math.max(0, Math.floor((MAX_STRING - 3) / 2));
  const j = Math.max(0, MAX_STRING - 3 - i);
  const s = quote(text.slice(0, i) + text.slice(text.length - j), bytes);
  return `${s.slice(0, i)}...${s.slice(s.length - j)}`;
}

/** Python's < for what reprlib sorts (numbers, str, bytes, tuples of them); null where Python would refuse. */
function compare(a: PyValue, b: PyValue): number | null {
  const na = asNumber(a);
  const nb = asNumber(b);
  if (na && nb) {
    if (na.im !== 0 || nb.im !== 0) return null;
    const x = 'int' in na.re ? Number(na.re.int) : na.re.float;
    const y = 'int' in nb.re ? Number(nb.re.int) : nb.re.float;
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.t === 'str' && b.t === 'str') return a.v < b.v ? -1 : a.v > b.v ? 1 : 0;
  if (a.t === 'bytes' && b.t === 'bytes') return a.hex < b.hex ? -1 : a.hex > b.hex ? 1 : 0;
  if ((a.t === 'tuple' && b.t === 'tuple') || (a.t === 'list' && b.t === 'list')) {
    for (let i = 0; i < Math.min(a.items.length, b.items.length); i++) {
      const c = compare(a.items[i]!, b.items[i]!);
      if (c !== 0) return c;
    }
    return a.items.length - b.items.length;
  }
  return null;
}

/** reprlib's _possibly_sorted: sorted where every pair compares, else as given. */
function possiblySorted<T>(list: T[], key: (x: T) => PyValue): T[] {
  let comparable = true;
  const sorted = [...list].sort((x, y) => {
    const c = compare(key(x), key(y));
    if (c === null) comparable = false;
    return c ?? 0;
  });
  return comparable ? sorted : list;
}

function complexPart(x: number): string {
  const r = pyFloatRepr(x);
  return r.endsWith('.0') ? r.slice(0, -2) : r;
}

function items(list: PyValue[], level: number): string {
  const shown = list.slice(0, MAX_ITEMS).map((x) => repr(x, level - 1));
  if (list.length > MAX_ITEMS) shown.push('...');
  return shown.join(', ');
}

function repr(v: PyValue, level: number): string {
  switch (v.t) {
    case 'none':
      return 'None';
    case 'bool':
      return v.v ? 'True' : 'False';
    case 'int':
      return elide(v.v, MAX_INT);
    case 'float':
      return pyFloatRepr(v.v);
    case 'complex': {
      const im = `${complexPart(v.im)}j`;
      if (Object.is(v.re, 0)) return im;
      return `(${complexPart(v.re)}${v.im >= 0 || Number.isNaN(v.im) ? '+' : ''}${im})`;
    }
    case 'str':
      return quoteShort(v.v, false);
    case 'bytes':
      return quoteShort(Buffer.from(v.hex, 'hex').toString('latin1'), true);
    case 'obj':
      return elide(v.repr, MAX_STRING);
    case 'list':
      return level <= 0 && v.items.length ? '[...]' : `[${items(v.items, level)}]`;
    case 'tuple':
      if (level <= 0 && v.items.length) return '(...)';
      return v.items.length === 1 ? `(${repr(v.items[0]!, level - 1)},)` : `(${items(v.items, level)})`;
    case 'set':
      if (!v.items.length) return 'set()';
      return level <= 0
        ? '{...}'
        : `{${items(
            possiblySorted(v.items, (x) => x),
            level,
          )}}`;
    case 'dict': {
      if (level <= 0 && v.items.length) return '{...}';
      const shown = possiblySorted(v.items, ([k]) => k)
        .slice(0, MAX_ITEMS)
        .map(([k, x]) => `${repr(k, level - 1)}: ${repr(x, level - 1)}`);
      if (v.items.length > MAX_ITEMS) shown.push('...');
      return `{${shown.join(', ')}}`;
    }
  }
}

/** The short repr stored as a test's expected or actual value. */
export function pyRepr(v: PyValue): string {
  return repr(v, MAX_LEVEL);
}
