import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { decodePyValue, pyEqual, pyFloatRepr, pyRepr, type PyValue } from '../../tasks/python-value.ts';

const LIMITS = { maxNodes: 10_000, maxChars: 100_000, maxDepth: 201 };
const val = (raw: unknown): PyValue => {
  const d = decodePyValue(raw, LIMITS);
  if ('error' in d) throw new Error(`${JSON.stringify(raw)}: ${d.error}`);
  return d.value;
};
const f = (x: string) => ['float', x];

describe('pyEqual mirrors Python ==', () => {
  const yes: [unknown, unknown][] = [
    [1, 1],
    [true, 1],
    [1, f('1.0')],
    [
      ['int', '9007199254740993'],
      ['int', '9007199254740993'],
    ],
    [['int', '18014398509481984'], f('1.8014398509481984e+16')],
    [['complex', f('1.0'), f('0.0')], 1],
    [
      ['dict', [1, 'a'], ['b', 2]],
      ['dict', ['b', 2], [true, 'a']],
    ],
    [
      ['set', 1, 2],
      ['set', 2, 1],
    ],
    [
      ['set', ['tuple', 1, 'x']],
      ['set', ['tuple', f('1.0'), 'x']],
    ],
    [
      ['list', ['tuple', 1, 'x']],
      ['list', ['tuple', f('1.0'), 'x']],
    ],
    [f('-0.0'), 0],
    [
      ['bytes', '6162'],
      ['bytes', '6162'],
    ],
    [
      ['obj', 'decimal.Decimal', "Decimal('1.5')"],
      ['obj', 'decimal.Decimal', "Decimal('1.5')"],
    ],
  ];
  const no: [unknown, unknown][] = [
    [f('nan'), f('nan')],
    [
      ['set', f('nan')],
      ['set', f('nan')],
    ],
    [
      ['list', 1, 2],
      ['tuple', 1, 2],
    ],
    ['1', 1],
    [null, 0],
    [
      ['list', 1, 2],
      ['list', 2, 1],
    ],
    [
      ['dict', ['a', 1]],
      ['dict', ['a', 1], ['b', 2]],
    ],
    [
      ['obj', 'x.A', 'A()'],
      ['obj', 'x.B', 'A()'],
    ],
    [f('1.5'), ['int', '1']],
    // 2**53 + 1 is not the float 2**53, though JavaScript's numbers would say so.
    [['int', '9007199254740993'], f('9007199254740992.0')],
    [['complex', f('1.0'), f('2.0')], 1],
    ['a', ['bytes', '61']],
  ];
  it.each(yes)('%j == %j', (a, b) => expect(pyEqual(val(a), val(b))).toBe(true));
  it.each(no)('%j != %j', (a, b) => expect(pyEqual(val(a), val(b))).toBe(false));
});

describe('decodePyValue is total and bounded', () => {
  const bad: [string, unknown, RegExp][] = [
    ['an int that is not digits', ['int', '12x'], /bad int/],
    ['an unsafe JSON number', 1e300, /not a safe integer/],
    ['a float that is not a float', f('1.5.5'), /bad float/],
    ['an unknown tag', ['frob', 1], /unknown tag/],
    ['an empty array', [], /expected a value/],
    ['an object', { a: 1 }, /expected a value/],
    ['a set with equal members', ['set', 1, f('1.0')], /equal members/],
    ['a dict with equal keys', ['dict', [1, 'a'], [true, 'b']], /equal keys/],
    ['bad bytes', ['bytes', 'xyz'], /bad bytes/],
    ['too many values', ['list', ...Array(20_000).fill(1)], /too large/],
    ['too much text', ['list', 'x'.repeat(60_000), 'y'.repeat(60_000)], /too large/],
  ];
  it.each(bad)('refuses %s', (_what, raw, why) => {
    const d = decodePyValue(raw, LIMITS);
    expect('error' in d && d.error).toMatch(why);
  });

  it('stops at its depth limit, whatever the nesting (no stack overflow)', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = ['list', deep];
    expect(decodePyValue(deep, { ...LIMITS, maxNodes: 1e6 })).toEqual({ error: 'nested too deeply' });
    let ok: unknown = 1;
    for (let i = 0; i < 200; i++) ok = ['tuple', ok];
    expect(pyEqual(val(ok), val(ok))).toBe(true);
  });
});

describe('pyRepr shows the compared value as Python would', () => {
  it('matches Python repr for floats (shortest digits, exponent rules)', () => {
    const xs = [
      0.1,
      1e16,
      1e15,
      1e-5,
      1e-4,
      123456789.125,
      5e-324,
      1.7976931348623157e308,
      -2.5,
      1 / 3,
      100,
      1e22,
      0.000123,
    ];
    const rng = (() => {
      let s = 42;
      return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    })();
    for (let i = 0; i < 500; i++) xs.push((rng() - 0.5) * 10 ** Math.floor(rng() * 40 - 20));
    const py = spawnSync(
      '/usr/bin/python3',
      ['-c', 'import json, sys\nfor x in json.load(sys.stdin): print(repr(float(x)))'],
      { input: JSON.stringify(xs), encoding: 'utf8' },
    );
    expect(py.status).toBe(0);
    expect(xs.map(pyFloatRepr)).toEqual(py.stdout.trim().split('\n'));
    expect([NaN, Infinity, -Infinity, -0].map(pyFloatRepr)).toEqual(['nan', 'inf', '-inf', '-0.0']);
  });

  it('renders containers, strings, bytes and big values short, like reprlib', () => {
    expect(pyRepr(val(['list', 1, f('2.0'), 'a', ['tuple', true], ['tuple'], ['set'], null]))).toBe(
      "[1, 2.0, 'a', (True,), (), set(), None]",
    );
    expect(pyRepr(val(['dict', ['k', ['list', 1, 2]]]))).toBe("{'k': [1, 2]}");
    expect(pyRepr(val("it's \n"))).toBe('"it\'s \\n"');
    expect(pyRepr(val(['bytes', '00410a']))).toBe("b'\\x00A\\n'");
    expect(pyRepr(val(['complex', f('1.0'), f('-2.5')]))).toBe('(1-2.5j)');
    expect(pyRepr(val(['complex', f('0.0'), f('1.0')]))).toBe('1j');
    expect(pyRepr(val(['list', ...Array(20).fill(0)]))).toBe(`[${Array(12).fill(0).join(', ')}, ...]`);
    expect(pyRepr(val('x'.repeat(500)))).toHaveLength(120);
    expect(pyRepr(val(['int', '1'.repeat(100)]))).toBe(`${'1'.repeat(18)}...${'1'.repeat(19)}`);
    expect(pyRepr(val(['list', ['list', ['list', ['list', ['list', 1]]]]]))).toBe('[[[[[...]]]]]');
  });
});
