// The nine ColBench-mini templates: for each, the facts its description leaves out (with the common guess and
// the values drawn instead), the request wordings, the reference built from the facts' values, and test calls
// chosen so that a wrong guess about any fact fails tests.
import type { MiniTemplate } from './mini-model.ts';
import { constants, num, pick, py, r2, randInt, shuffled } from './mini-source.ts';

const bulkDiscount: MiniTemplate = {
  id: 'bulk-discount',
  functionName: 'order_charge',
  params: 'subtotal',
  requests: [
    'I sell {product} online. Bigger orders get a discount and small orders pay for shipping. Can you write a function that tells me what to charge a customer for a given order subtotal?',
    'My little {product} shop gives a discount on large orders, and everyone else pays shipping. I need a function that takes the order subtotal and returns what the customer pays.',
  ],
  facts: [
    {
      key: 'DISCOUNT_THRESHOLD',
      kind: 'number',
      comment: 'order subtotal in dollars from which the bulk discount applies',
      questions: [
        'What is the subtotal threshold for the discount?',
        'From what order subtotal does the discount apply?',
      ],
      guess: 100,
      pool: [40, 50, 60, 75, 80, 120, 150, 200],
    },
    {
      key: 'DISCOUNT_PERCENT',
      kind: 'number',
      comment: 'size of the bulk discount in percent of the subtotal',
      questions: ['How many percent is the discount?', 'How big is the discount, in percent?'],
      guess: 10,
      pool: [5, 8, 12, 15, 20, 25],
    },
    {
      key: 'DISCOUNT_AT_EXACT_THRESHOLD',
      kind: 'boolean',
      comment: 'whether an order exactly at the threshold already gets the discount',
      questions: ['Does an order exactly at the threshold already get the discount?'],
      guess: true,
      pool: [true, false],
    },
    {
      key: 'SHIPPING_FEE',
      kind: 'number',
      comment: 'flat shipping fee in dollars for orders without the discount',
      questions: [
        'What is the shipping fee for orders without the discount?',
        'How much is the shipping fee on smaller orders?',
      ],
      guess: 5,
      pool: [3.5, 4.99, 6, 7.5, 9],
    },
  ],
  build(name, v) {
    return `${constants(this.facts, v)}


def ${name}(subtotal):
    gets_discount = subtotal > DISCOUNT_THRESHOLD or (DISCOUNT_AT_EXACT_THRESHOLD and subtotal == DISCOUNT_THRESHOLD)
    if gets_discount:
        return round(subtotal * (100 - DISCOUNT_PERCENT) / 100, 2)
    return round(subtotal + SHIPPING_FEE, 2)
`;
  },
  testArgs(rng, v) {
    const t = num(v, 'DISCOUNT_THRESHOLD');
    return [
      t,
      t - 10,
      r2(t + 0.01),
      2 * t,
      0,
      r2(t * 3 + 0.5),
      r2(t - 0.01),
      r2(5 + rng() * t * 0.5),
      r2(t + 10 + rng() * 50),
      r2(t * 1.5 + rng() * 10),
    ].map(String);
  },
};

const METERS_PER_UNIT: Record<string, number> = {
  miles: 1609.344,
  kilometers: 1000,
  meters: 1,
  yards: 0.9144,
  feet: 0.3048,
};
export const UNITS = Object.keys(METERS_PER_UNIT);

const distanceUnits: MiniTemplate = {
  id: 'distance-units',
  functionName: 'convert_distance',
  params: 'distance',
  requests: [
    'I log distances from different apps and they never agree on units. Write me a function that converts a distance for me.',
    'My running watch and my training plan use different units for distances. Can you write a function that converts a distance so I can compare them?',
  ],
  facts: [
    {
      key: 'INPUT_UNIT',
      kind: 'choice',
      options: UNITS,
      comment: 'unit of the distance that is passed in',
      questions: ['What unit is the distance you pass in?', 'Which unit are the distances you give the function in?'],
      guess: 'miles',
      pool: UNITS,
    },
    {
      key: 'OUTPUT_UNIT',
      kind: 'choice',
      options: UNITS,
      comment: 'unit the converted result is given in',
      questions: ['What unit should the converted result be in?', 'Which unit do you want the result in?'],
      guess: 'kilometers',
      pool: UNITS,
    },
    {
      key: 'DECIMALS',
      kind: 'number',
      comment: 'number of decimal places kept in the result',
      questions: ['How many decimal places should the result have?'],
      guess: 2,
      pool: [0, 1, 3],
    },
    {
      key: 'ROUNDING',
      kind: 'choice',
      options: ['nearest', 'down', 'up'],
      comment: 'direction in which the result is rounded to those decimal places',
      questions: ['Should the result be rounded to the nearest value, or always down or up?'],
      guess: 'nearest',
      pool: ['nearest', 'down', 'up'],
    },
  ],
  build(name, v) {
    return `import math

METERS_PER_UNIT = {${UNITS.map((u) => `'${u}': ${METERS_PER_UNIT[u]}`).join(', ')}}
${constants(this.facts, v)}


def ${name}(distance):
    value = distance * METERS_PER_UNIT[INPUT_UNIT] / METERS_PER_UNIT[OUTPUT_UNIT]
    scale = 10 ** DECIMALS
    if ROUNDING == 'down':
        return math.floor(value * scale) / scale
    if ROUNDING == 'up':
        return math.ceil(value * scale) / scale
    return round(value, DECIMALS)
`;
  },
  testArgs(rng, v) {
    // Distances sized so the results are not all rounded away (yards to miles needs thousands of yards).
    const ratio = (METERS_PER_UNIT[String(v.OUTPUT_UNIT)] ?? 1) / (METERS_PER_UNIT[String(v.INPUT_UNIT)] ?? 1);
    const scale = Math.max(1, Math.round(ratio));
    const pool = [0, 1, 2.5, 3, 5, 10, 13.1, 26.2, 42, 100, 0.3, 7.77, 1234, 0.123];
    return shuffled(rng, pool)
      .slice(0, 10)
      .map((d) => String(r2(d * scale)));
  },
};

const gradeBands: MiniTemplate = {
  id: 'grade-bands',
  functionName: 'result_band',
  params: 'score',
  requests: [
    'I mark exams out of 100 and put every score in one of our bands: distinction, merit or pass, and something else for those who did not pass. Write a function that gives the band for a score.',
    'Our course reports a band instead of the raw score: distinction, merit, pass, or the band for people who failed. Can you write the function that turns a score into the band?',
  ],
  facts: [
    // The pools do not overlap, so the bands stay ordered whatever is drawn.
    {
      key: 'DISTINCTION_MIN',
      kind: 'number',
      comment: 'lowest score that still earns a distinction',
      questions: ['What is the lowest score that earns a distinction?'],
      guess: 90,
      pool: [85, 88, 92, 95],
    },
    {
      key: 'MERIT_MIN',
      kind: 'number',
      comment: 'lowest score that still earns a merit',
      questions: ['What is the lowest score for a merit?'],
      guess: 80,
      pool: [65, 68, 72, 75, 77],
    },
    {
      key: 'PASS_MIN',
      kind: 'number',
      comment: 'lowest score that still passes',
      questions: ['What is the lowest passing score?'],
      guess: 60,
      pool: [40, 45, 50, 55],
    },
    {
      key: 'FAIL_LABEL',
      kind: 'string',
      comment: 'band given to scores below the pass mark',
      questions: ['What band should scores below the pass mark get?'],
      guess: 'fail',
      pool: ['not yet', 'retake', 'below pass', 'unsuccessful'],
    },
    {
      key: 'INVALID_LABEL',
      kind: 'string',
      comment: 'returned for scores below 0 or above 100',
      questions: ['What should it return for scores below 0 or above 100?'],
      guess: 'invalid',
      pool: ['invalid score', 'error', 'out of range'],
    },
  ],
  build(name, v) {
    return `${constants(this.facts, v)}


def ${name}(score):
    if score < 0 or score > 100:
        return INVALID_LABEL
    if score >= DISTINCTION_MIN:
        return 'distinction'
    if score >= MERIT_MIN:
        return 'merit'
    if score >= PASS_MIN:
        return 'pass'
    return FAIL_LABEL
`;
  },
  testArgs(rng, v) {
    const d = num(v, 'DISTINCTION_MIN');
    const m = num(v, 'MERIT_MIN');
    const p = num(v, 'PASS_MIN');
    return [
      d,
      d - 1,
      m,
      m - 1,
      p,
      p - 1,
      randInt(rng, 0, p - 2),
      100,
      -randInt(rng, 1, 10),
      100 + randInt(rng, 1, 20),
    ].map(String);
  },
};

const tagLine: MiniTemplate = {
  id: 'tag-line',
  functionName: 'tag_line',
  params: 'tags',
  requests: [
    'Under each post on my blog I show its tags on a single line. Write a function that turns the list of tags into that line.',
    'I want a little line of tags under every recipe on my site. Can you write a function that builds it from the list of tags?',
  ],
  facts: [
    {
      key: 'SEPARATOR',
      kind: 'string',
      comment: 'text placed between two tags',
      questions: ['What should go between two tags?', 'What separator should be placed between the tags?'],
      guess: ', ',
      pool: [' | ', ' / ', '; ', ' · ', ' - '],
    },
    {
      key: 'TAG_PREFIX',
      kind: 'string',
      comment: 'character every tag starts with',
      questions: ['Should every tag start with some character?'],
      guess: '#',
      pool: ['@', '+', '', '~'],
    },
    {
      key: 'MAX_TAGS',
      kind: 'number',
      comment: 'most tags shown, tags beyond this many are left out',
      questions: ['Is there a maximum number of tags shown?'],
      guess: 1000,
      pool: [2, 3, 4, 6],
    },
    {
      key: 'LOWERCASE',
      kind: 'boolean',
      comment: 'whether tags are turned into lower case',
      questions: ['Should the tags be turned into lower case?'],
      guess: false,
      pool: [true, false],
    },
    {
      key: 'EMPTY_TEXT',
      kind: 'string',
      comment: 'text returned when there are no tags at all',
      questions: ['What should it return when there are no tags at all?'],
      guess: '',
      pool: ['no tags', '(none)', '-', 'untagged'],
    },
  ],
  build(name, v) {
    return `${constants(this.facts, v)}


def ${name}(tags):
    cleaned = [t.strip() for t in tags if t.strip()]
    if not cleaned:
        return EMPTY_TEXT
    if LOWERCASE:
        cleaned = [t.lower() for t in cleaned]
    return SEPARATOR.join(TAG_PREFIX + t for t in cleaned[:MAX_TAGS])
`;
  },
  testArgs(rng, v) {
    const words = [
      'Travel',
      'food',
      'Python',
      'garden',
      'DIY',
      'Music',
      'books',
      'Cats',
      'winter',
      'Coffee',
      'art',
      'Hiking',
    ];
    const max = num(v, 'MAX_TAGS');
    const list = (n: number) => py(shuffled(rng, words).slice(0, n));
    return [
      list(1),
      list(2),
      list(max),
      list(max + 1),
      list(max + 2),
      '[]',
      "['  ', '']",
      list(3),
      `['  ${pick(rng, words)} ', '${pick(rng, words)}']`,
      list(Math.min(8, max + 3)),
    ];
  },
};

const priceChange: MiniTemplate = {
  id: 'price-change',
  functionName: 'percent_change',
  params: 'price_a, price_b',
  requests: [
    'I keep track of the prices of things I buy regularly. Write a function that takes the two prices and tells me by how many percent the price changed.',
    'For my budget spreadsheet I need a function that gets two prices of the same item and returns the change in percent.',
  ],
  facts: [
    {
      key: 'FIRST_ARGUMENT',
      kind: 'choice',
      options: ['new', 'old'],
      comment: 'which price is passed first, the new or the old one',
      questions: ['Which price comes first in the call, the old one or the new one?'],
      guess: 'old',
      pool: ['new', 'old'],
    },
    {
      key: 'DECIMALS',
      kind: 'number',
      comment: 'decimal places of the percentage',
      questions: ['How many decimal places should the percentage have?'],
      guess: 2,
      pool: [0, 1, 3],
    },
    {
      key: 'ZERO_BASE_RESULT',
      kind: 'string',
      comment: 'returned when the old price is zero',
      questions: ['What should it return when the old price is zero?'],
      guess: 0,
      pool: ['n/a', 'undefined', 'no base price'],
    },
  ],
  build(name, v) {
    return `${constants(this.facts, v)}


def ${name}(price_a, price_b):
    if FIRST_ARGUMENT == 'new':
        new, old = price_a, price_b
    else:
        old, new = price_a, price_b
    if old == 0:
        return ZERO_BASE_RESULT
    return round((new - old) / old * 100, DECIMALS)
`;
  },
  testArgs(rng) {
    const a = randInt(rng, 20, 200);
    const b = randInt(rng, 20, 200);
    return [
      `120, 100`,
      `100, 120`,
      `${a}, ${b === a ? b + 7 : b}`,
      `0, ${randInt(rng, 5, 50)}`,
      `${randInt(rng, 5, 50)}, 0`,
      `50, 50`,
      `33.3, 30`,
      `10, 3`,
      `7, 9`,
      `${r2(a * 1.37)}, ${a}`,
    ];
  },
};

const parcelShipping: MiniTemplate = {
  id: 'parcel-shipping',
  functionName: 'parcel_cost',
  params: 'weight_kg',
  requests: [
    "I ship parcels for my small business. Write a function that gives the shipping cost from the parcel's weight in kilograms; parcels that are too heavy should give 'too heavy'.",
    "Can you write a function for my web shop that prices a parcel by its weight in kilograms? If it is over the weight limit it should return 'too heavy'.",
  ],
  facts: [
    {
      key: 'BASE_FEE',
      kind: 'number',
      comment: 'fixed fee in dollars charged for every parcel',
      questions: ['Is there a fixed fee charged for every parcel, and how much is it?'],
      guess: 5,
      pool: [3, 3.5, 4.25, 6, 7],
    },
    {
      key: 'PER_KG_FEE',
      kind: 'number',
      comment: 'fee in dollars added for each kilogram of weight',
      questions: ['How much is added per kilogram?'],
      guess: 1,
      pool: [0.8, 1.2, 1.5, 2.25, 3],
    },
    {
      key: 'ROUND_WEIGHT_UP',
      kind: 'boolean',
      comment: 'whether a started kilogram is charged as a full kilogram',
      questions: ['Is a started kilogram charged as a full kilogram?'],
      guess: false,
      pool: [true, false],
    },
    {
      key: 'MAX_WEIGHT_KG',
      kind: 'number',
      comment: 'heaviest parcel accepted, in kilograms',
      questions: ['What is the heaviest parcel you accept?'],
      guess: 30,
      pool: [20, 25, 31.5, 40],
    },
  ],
  build(name, v) {
    return `import math

${constants(this.facts, v)}


def ${name}(weight_kg):
    if weight_kg > MAX_WEIGHT_KG:
        return 'too heavy'
    charged = math.ceil(weight_kg) if ROUND_WEIGHT_UP else weight_kg
    return round(BASE_FEE + PER_KG_FEE * charged, 2)
`;
  },
  testArgs(rng, v) {
    const max = num(v, 'MAX_WEIGHT_KG');
    return [0.5, 1, 1.2, 2.7, 10, max, max + 0.5, r2(max - 0.1), r2(1 + rng() * 12), 30.5].map(String);
  },
};

const averageRating: MiniTemplate = {
  id: 'average-rating',
  functionName: 'average_rating',
  params: 'ratings',
  requests: [
    'People rate the recipes on my site and I want to show the average rating next to each recipe. Write a function that computes it from the list of ratings.',
    'I collect ratings for the workshops I teach. Can you write a function that gives me the average of a list of ratings?',
  ],
  facts: [
    {
      key: 'IGNORE_ZEROS',
      kind: 'boolean',
      comment: 'whether ratings of zero, which mean not rated, are left out',
      questions: ['Should ratings of zero be left out of the average?'],
      guess: false,
      pool: [true, false],
    },
    {
      key: 'EMPTY_RESULT',
      kind: 'string',
      comment: 'returned when there are no ratings left to average',
      questions: ['What should it return when there are no ratings to average?'],
      guess: 0,
      pool: ['no ratings', 'n/a', 'none yet'],
    },
    {
      key: 'DECIMALS',
      kind: 'number',
      comment: 'decimal places of the average',
      questions: ['How many decimal places should the average have?'],
      guess: 2,
      pool: [0, 1, 3],
    },
    {
      key: 'MAX_RATING',
      kind: 'number',
      comment: 'highest rating, anything above it counts as this value',
      questions: ['What is the highest rating, and what happens to ratings above it?'],
      guess: 5,
      pool: [4, 7, 10],
    },
  ],
  build(name, v) {
    return `${constants(this.facts, v)}


def ${name}(ratings):
    kept = [min(r, MAX_RATING) for r in ratings if not (IGNORE_ZEROS and r == 0)]
    if not kept:
        return EMPTY_RESULT
    return round(sum(kept) / len(kept), DECIMALS)
`;
  },
  testArgs(rng) {
    const list = (n: number, hi: number) => py(Array.from({ length: n }, () => randInt(rng, 0, hi)));
    return [
      '[]',
      '[0, 0]',
      '[3, 4, 0]',
      '[5, 4, 4]',
      '[11, 2]',
      list(5, 12),
      '[1, 2, 2]',
      list(6, 8),
      '[0]',
      '[3.5, 4.25, 0, 9]',
    ];
  },
};

const usernameRules: MiniTemplate = {
  id: 'username-rules',
  functionName: 'valid_username',
  params: 'name',
  requests: [
    'People pick a username when they join my forum. Write a function that says whether a username is allowed.',
    'I need a function for our sign-up page that checks whether a chosen username follows our rules.',
  ],
  facts: [
    {
      key: 'MIN_LENGTH',
      kind: 'number',
      comment: 'fewest characters a username may have',
      questions: ['What is the minimum length of a username?'],
      guess: 3,
      pool: [2, 4, 5, 6],
    },
    {
      key: 'MAX_LENGTH',
      kind: 'number',
      comment: 'most characters a username may have',
      questions: ['What is the maximum length of a username?'],
      guess: 20,
      pool: [12, 15, 16, 24],
    },
    {
      key: 'ALLOWED_SYMBOLS',
      kind: 'string',
      comment: 'characters allowed besides letters and digits',
      questions: ['Which characters besides letters and digits are allowed?'],
      guess: '_',
      pool: ['-', '.', '_.', '-.', '_-'],
    },
    {
      key: 'MUST_START_WITH_LETTER',
      kind: 'boolean',
      comment: 'whether the first character has to be a letter',
      questions: ['Does a username have to start with a letter?'],
      guess: false,
      pool: [true, false],
    },
  ],
  build(name, v) {
    return `${constants(this.facts, v)}


def ${name}(name):
    if not MIN_LENGTH <= len(name) <= MAX_LENGTH:
        return False
    if MUST_START_WITH_LETTER and not name[:1].isalpha():
        return False
    return all(c.isalnum() or c in ALLOWED_SYMBOLS for c in name)
`;
  },
  testArgs(rng, v) {
    const min = num(v, 'MIN_LENGTH');
    const max = num(v, 'MAX_LENGTH');
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    const word = (n: number) => Array.from({ length: n }, () => pick(rng, [...letters])).join('');
    const args = [
      word(min),
      word(Math.max(min - 1, 1)),
      word(max),
      word(max + 1),
      `${word(3)}_${word(3)}`,
      `${word(3)}-${word(3)}`,
      `${word(3)}.${word(2)}`,
      `7${word(min + 1)}`,
      `_${word(min + 1)}`,
      `${word(2)} ${word(3)}`,
    ];
    return args.map((a) => py(a));
  },
};

const billableTime: MiniTemplate = {
  id: 'billable-time',
  functionName: 'call_fee',
  params: 'minutes',
  requests: [
    'I do consulting calls and bill by the time spent. Write a function that gives the amount to bill for a call of a given length in minutes.',
    'Can you write a function for my invoices that works out what a client owes for a call, from its length in minutes?',
  ],
  facts: [
    {
      key: 'HOURLY_RATE',
      kind: 'number',
      comment: 'price of one hour in dollars',
      questions: ['What is your hourly rate?'],
      guess: 100,
      pool: [60, 75, 85, 120, 150],
    },
    {
      key: 'BILLING_INCREMENT',
      kind: 'number',
      comment: 'time is billed in blocks of this many minutes, a started block counts in full',
      questions: ['In blocks of how many minutes do you bill?'],
      guess: 15,
      pool: [5, 6, 10, 20, 30],
    },
    {
      key: 'MINIMUM_MINUTES',
      kind: 'number',
      comment: 'every call is billed for at least this many minutes',
      questions: ['Is there a minimum number of minutes billed for every call?'],
      guess: 0,
      pool: [15, 20, 45, 60],
    },
  ],
  build(name, v) {
    return `import math

${constants(this.facts, v)}


def ${name}(minutes):
    billed = max(minutes, MINIMUM_MINUTES)
    blocks = math.ceil(billed / BILLING_INCREMENT)
    return round(blocks * BILLING_INCREMENT * HOURLY_RATE / 60, 2)
`;
  },
  testArgs(rng, v) {
    const inc = num(v, 'BILLING_INCREMENT');
    const min = num(v, 'MINIMUM_MINUTES');
    return [
      1,
      min - 1,
      min,
      min + 1,
      min + inc,
      min + inc + 1,
      2 * min + 7,
      randInt(rng, 100, 200),
      min + randInt(rng, 2, 9),
      min + 3 * inc - 1,
    ].map(String);
  },
};

export const MINI_TEMPLATES: readonly MiniTemplate[] = [
  bulkDiscount,
  distanceUnits,
  gradeBands,
  tagLine,
  priceChange,
  parcelShipping,
  averageRating,
  usernameRules,
  billableTime,
];

export function miniTemplate(id: string): MiniTemplate {
  const t = MINI_TEMPLATES.find((x) => x.id === id);
  if (!t) throw new Error(`unknown ColBench-mini template "${id}"`);
  return t;
}
