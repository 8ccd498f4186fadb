// The project's own backend tasks, in ColBench's shape: a vague request that ends with the signature, a hidden
// reference function, and ten test calls. Each description leaves out details the reference pins down
// (constants, thresholds, rounding, edge cases, output format), so an agent has to ask; the test calls are
// chosen to hit those details. References are standard-library Python 3.11 and deterministic.

export interface BuiltinBackendTask {
  /** Stable identifier: the task's externalId and the key of its train/test split. */
  slug: string;
  description: string;
  reference: string;
  tests: string[];
}

const SIGNATURE_LEAD = 'The signature of the function is: ';

function task(slug: string, request: string, reference: string, tests: string[]): BuiltinBackendTask {
  const signature = /^def [^\n]*\)/m.exec(reference);
  if (!signature) throw new Error(`built-in task ${slug}: reference has no def line`);
  return {
    slug,
    description: `${request.trim()} ${SIGNATURE_LEAD}${signature[0]}`,
    reference: reference.trim() + '\n',
    tests,
  };
}

export const BUILTIN_BACKEND_TASKS: readonly BuiltinBackendTask[] = [
  task(
    'restaurant-bill-split',
    "We go out to eat as a group a lot and splitting the bill is always a mess. I'd like a function that takes the bill, how many of us there are and how the service was, adds a tip, and tells each person what to pay.",
    `
import math

# share of the bill left as a tip, by how the service was
TIP_RATES = {'poor': 0.10, 'ok': 0.15, 'great': 0.20}


def split_restaurant_bill(total, people, service):
    # words we do not know get the middle tip
    rate = TIP_RATES.get(service.strip().lower(), TIP_RATES['ok'])
    with_tip = total * (1 + rate)
    # nobody at the table means one payer
    payers = max(people, 1)
    # each share is rounded UP to the next cent so the bill is always covered
    return math.ceil(round(with_tip * 100 / payers, 6)) / 100
`,
    [
      "split_restaurant_bill(100, 4, 'great')",
      "split_restaurant_bill(87.5, 3, 'poor')",
      "split_restaurant_bill(60, 1, 'OK')",
      "split_restaurant_bill(45.2, 2, 'amazing')",
      "split_restaurant_bill(0, 3, 'great')",
      "split_restaurant_bill(120, 0, 'poor')",
      "split_restaurant_bill(99.99, 7, ' Great ')",
      "split_restaurant_bill(250, 6, 'ok')",
      "split_restaurant_bill(18.4, 3, 'terrible')",
      "split_restaurant_bill(73, 5, 'poor')",
    ],
  ),
  task(
    'parking-garage-fee',
    'I run a small parking garage and need to compute what people owe when they leave, from how many minutes they stayed. Short stays should be free and long stays should not get absurdly expensive.',
    `
import math

FREE_MINUTES = 30  # stays up to half an hour cost nothing
HOURLY_RATE = 2.5  # charged for every started hour
DAILY_MAXIMUM = 18.0  # a full day, or what is left of one, never costs more than this


def parking_fee(minutes):
    if minutes <= FREE_MINUTES:
        return 0.0
    days, rest = divmod(minutes, 24 * 60)
    started_hours = math.ceil(rest / 60)
    return days * DAILY_MAXIMUM + min(started_hours * HOURLY_RATE, DAILY_MAXIMUM)
`,
    [
      'parking_fee(0)',
      'parking_fee(30)',
      'parking_fee(31)',
      'parking_fee(60)',
      'parking_fee(61)',
      'parking_fee(150)',
      'parking_fee(600)',
      'parking_fee(1440)',
      'parking_fee(1500)',
      'parking_fee(3000)',
    ],
  ),
  task(
    'tiered-water-bill',
    "Our town's water bill uses price blocks that get more expensive the more you use, plus some fixed fee. Can you write something that works out the monthly bill from the cubic meters used?",
    `
SERVICE_CHARGE = 8.0  # fixed monthly fee, charged even when nothing was used
# (upper end of the block in cubic meters, price per cubic meter inside the block)
PRICE_BLOCKS = [(10, 1.5), (30, 2.0), (float('inf'), 3.25)]


def water_bill(cubic_meters):
    # a negative meter reading is treated as no use at all
    used = max(cubic_meters, 0)
    total = SERVICE_CHARGE
    lower = 0
    for upper, price in PRICE_BLOCKS:
        if used > lower:
            total += (min(used, upper) - lower) * price
        lower = upper
    return round(total, 2)
`,
    [
      'water_bill(0)',
      'water_bill(5)',
      'water_bill(10)',
      'water_bill(12)',
      'water_bill(30)',
      'water_bill(31)',
      'water_bill(45.5)',
      'water_bill(-3)',
      'water_bill(100)',
      'water_bill(20.4)',
    ],
  ),
  task(
    'plant-watering-interval',
    "I keep forgetting to water my plants. I'd like a function that tells me every how many days to water a plant, given what kind of plant it is and the temperature lately.",
    `
# days between waterings in mild weather
BASE_INTERVALS = {'cactus': 14, 'succulent': 10, 'fern': 3, 'herb': 2}
DEFAULT_INTERVAL = 7  # any plant that is not in the table
HOT_DAY = 30  # from this temperature (Celsius) on, water twice as often
COLD_DAY = 10  # below this temperature plants can wait three more days
COLD_EXTRA_DAYS = 3


def watering_interval(plant, temperature_c):
    days = BASE_INTERVALS.get(plant.strip().lower(), DEFAULT_INTERVAL)
    if temperature_c >= HOT_DAY:
        days = days // 2
    elif temperature_c < COLD_DAY:
        days += COLD_EXTRA_DAYS
    # always at least one day
    return max(days, 1)
`,
    [
      "watering_interval('Cactus', 20)",
      "watering_interval('cactus', 35)",
      "watering_interval('fern', 30)",
      "watering_interval('herb', 31)",
      "watering_interval('herb', 5)",
      "watering_interval('orchid', 22)",
      "watering_interval('orchid', 40)",
      "watering_interval(' Succulent ', 9)",
      "watering_interval('fern', 10)",
      "watering_interval('monstera', -2)",
    ],
  ),
  task(
    'blog-reading-time',
    'For my blog I want the little "x min read" label at the top of each post. Write a function that takes the text of the post and gives me that label. Some readers are faster than others so the speed should be adjustable.',
    `
import math


def reading_time(text, words_per_minute=220):
    words = len(text.split())
    if words == 0:
        return '0 min read'
    # partial minutes count as a whole minute
    minutes = math.ceil(words / words_per_minute)
    return f'{minutes} min read'
`,
    [
      "reading_time('')",
      "reading_time('   ')",
      "reading_time('hello world')",
      "reading_time('word ' * 220)",
      "reading_time('word ' * 221)",
      "reading_time('word ' * 1000)",
      "reading_time('word ' * 1000, 300)",
      "reading_time('a b c d e f', 2)",
      "reading_time('one\\ntwo\\tthree four', 3)",
      "reading_time('word ' * 4400, words_per_minute=110)",
    ],
  ),
  task(
    'tidy-hashtags',
    "My social media manager sends me hashtags in all sorts of shapes, some with #, some without, some repeated. I'd like a function that cleans up a list of them.",
    `
def clean_hashtags(tags):
    seen = set()
    result = []
    for tag in tags:
        word = tag.strip().lstrip('#').lower()
        # spaces inside a tag are squeezed out, not split into separate tags
        word = word.replace(' ', '')
        # empty tags and repeats are dropped, the first spelling wins
        if not word or word in seen:
            continue
        seen.add(word)
        result.append('#' + word)
    return result
`,
    [
      "clean_hashtags(['#Summer', 'summer', 'beach'])",
      'clean_hashtags([])',
      "clean_hashtags(['##Travel', ' travel ', '#TRAVEL'])",
      "clean_hashtags(['road trip', 'RoadTrip', '#road Trip'])",
      "clean_hashtags(['#', '', '   ', 'ok'])",
      "clean_hashtags(['Food', 'foodie', 'food'])",
      "clean_hashtags(['#a', '#b', '#a', '#c', '#b'])",
      "clean_hashtags(['New York', 'newyork', 'NY'])",
      "clean_hashtags(['#2024', '2024', '#goals'])",
      "clean_hashtags(['  #Cats  ', '#dogs', 'CATS'])",
    ],
  ),
  task(
    'body-mass-label',
    'Can you make me a function that takes my weight and height and tells me my BMI along with what category that falls into?',
    `
def bmi_label(weight_kg, height_cm):
    # height comes in centimeters
    bmi = round(weight_kg / (height_cm / 100) ** 2, 1)
    if bmi < 18.5:
        label = 'underweight'
    elif bmi < 25:
        label = 'normal'
    elif bmi < 30:
        label = 'overweight'
    else:
        label = 'obese'
    return f'{bmi} ({label})'
`,
    [
      'bmi_label(70, 175)',
      'bmi_label(50, 180)',
      'bmi_label(90, 175)',
      'bmi_label(110, 170)',
      'bmi_label(56.7, 175)',
      'bmi_label(76.5, 175)',
      'bmi_label(91.8, 175)',
      'bmi_label(60, 160)',
      'bmi_label(45, 150)',
      'bmi_label(100, 200)',
    ],
  ),
  task(
    'running-pace',
    'I log my runs as a distance and a time. I want a function that turns that into my pace so I can compare runs.',
    `
def running_pace(distance_km, total_minutes):
    # a zero or negative distance has no pace
    if distance_km <= 0:
        return '--:--'
    seconds_per_km = round(total_minutes * 60 / distance_km)
    minutes, seconds = divmod(seconds_per_km, 60)
    return f'{minutes}:{seconds:02d} /km'
`,
    [
      'running_pace(5, 25)',
      'running_pace(10, 52.5)',
      'running_pace(0, 30)',
      'running_pace(-1, 30)',
      'running_pace(21.1, 105)',
      'running_pace(3, 20)',
      'running_pace(42.195, 240)',
      'running_pace(1, 4.01)',
      'running_pace(7.5, 40)',
      'running_pace(2, 0)',
    ],
  ),
  task(
    'overdue-book-fine',
    'Our little library charges fines for late books. Write a function that tells the librarian how much someone owes for a book, from how many days late it is and whether the borrower is a kid.',
    `
GRACE_DAYS = 2  # grace period: the first two late days are free
DAILY_FINE = 0.25  # charged for each late day once the grace days are over
MAX_FINE = 10.0  # the fine for one book never goes above this


def library_fine(days_late, is_child):
    charged_days = max(days_late - GRACE_DAYS, 0)
    fine = min(charged_days * DAILY_FINE, MAX_FINE)
    if is_child:
        # children pay half, so their cap is halved as well
        fine = fine / 2
    return round(fine, 2)
`,
    [
      'library_fine(0, False)',
      'library_fine(2, False)',
      'library_fine(3, False)',
      'library_fine(10, False)',
      'library_fine(10, True)',
      'library_fine(41, False)',
      'library_fine(42, False)',
      'library_fine(100, True)',
      'library_fine(-5, False)',
      'library_fine(7, True)',
    ],
  ),
  task(
    'password-strength-label',
    'When people sign up on my site I want to show whether their password is weak, medium or strong. Can you write the function that decides that?',
    `
SYMBOLS = '!@#$%^&*?-_'
# passwords that are always weak, however they score
COMMON_PASSWORDS = {'password', 'qwerty', 'letmein', '123456789', 'iloveyou'}


def password_strength(password):
    if password.lower() in COMMON_PASSWORDS:
        return 'weak'
    points = 0
    if len(password) >= 12:
        points += 2
    elif len(password) >= 8:
        points += 1
    if any(c.isdigit() for c in password):
        points += 1
    # mixed case means at least one upper and one lower case letter
    if any(c.isupper() for c in password) and any(c.islower() for c in password):
        points += 1
    if any(c in SYMBOLS for c in password):
        points += 1
    if points >= 4:
        return 'strong'
    if points == 3:
        return 'medium'
    return 'weak'
`,
    [
      "password_strength('Password')",
      "password_strength('QWERTY')",
      "password_strength('abc')",
      "password_strength('abcdefgh')",
      "password_strength('abcdefg1')",
      "password_strength('Abcdefg1')",
      "password_strength('Abcdefg1!')",
      "password_strength('correcthorsebattery')",
      "password_strength('correcthorse7')",
      "password_strength('Tr0ub4dor&3')",
    ],
  ),
  task(
    'player-leaderboard',
    'I track scores for our board game nights: for each player I have a list of their game scores. I want a leaderboard out of it.',
    `
def leaderboard(scores):
    rows = []
    for player, games in scores.items():
        # players who have not played yet are left out
        if not games:
            continue
        rows.append((round(sum(games) / len(games), 2), player))
    # best average first; equal averages in alphabetical order of the name
    rows.sort(key=lambda row: (-row[0], row[1]))
    return [f'{player}: {average}' for average, player in rows]
`,
    [
      "leaderboard({'Ann': [10, 20], 'Bob': [30]})",
      'leaderboard({})',
      "leaderboard({'Zoe': [5], 'Adam': [5]})",
      "leaderboard({'Kim': [], 'Lee': [7, 8, 9]})",
      "leaderboard({'A': [1, 2, 2], 'B': [1.5, 2]})",
      "leaderboard({'x': [100], 'y': [99.995], 'z': [0]})",
      "leaderboard({'Mia': [3, 3, 4], 'Noah': [10], 'Eve': []})",
      "leaderboard({'solo': []})",
      "leaderboard({'b': [2], 'a': [2], 'c': [3]})",
      "leaderboard({'P1': [12, 15, 9, 20], 'P2': [14, 14], 'P3': [20, 8]})",
    ],
  ),
  task(
    'merge-busy-blocks',
    'I have busy blocks from a few calendars, each as a start and end minute of the day, in no particular order and some overlap. I need them combined into a clean list.',
    `
def merge_busy_times(intervals):
    # blocks typed backwards (end before start) are turned around
    ordered = sorted((min(a, b), max(a, b)) for a, b in intervals)
    merged = []
    for start, end in ordered:
        # blocks that merely touch are joined too
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
`,
    [
      'merge_busy_times([])',
      'merge_busy_times([(60, 120)])',
      'merge_busy_times([(60, 120), (100, 180)])',
      'merge_busy_times([(60, 120), (120, 180)])',
      'merge_busy_times([(60, 120), (121, 180)])',
      'merge_busy_times([(300, 200), (100, 150)])',
      'merge_busy_times([(0, 600), (60, 90), (500, 700)])',
      'merge_busy_times([[10, 20], [5, 8], [8, 9]])',
      'merge_busy_times([(5, 5), (5, 10)])',
      'merge_busy_times([(900, 960), (480, 540), (530, 600), (960, 1000)])',
    ],
  ),
  task(
    'squeeze-repeated-letters',
    'I need a simple way to shorten strings that have lots of repeated characters in a row, like a basic compression, but it should stay readable.',
    `
MIN_RUN = 3  # shorter runs are written out unchanged


def squeeze_repeats(text):
    out = []
    i = 0
    while i < len(text):
        j = i
        while j < len(text) and text[j] == text[i]:
            j += 1
        run = j - i
        if run >= MIN_RUN:
            out.append(f'{text[i]}{run}')
        else:
            out.append(text[i] * run)
        i = j
    return ''.join(out)
`,
    [
      "squeeze_repeats('')",
      "squeeze_repeats('abc')",
      "squeeze_repeats('aab')",
      "squeeze_repeats('aaab')",
      "squeeze_repeats('bbbbbbbbbbbb')",
      "squeeze_repeats('aaabbbccc')",
      "squeeze_repeats('aabbaa')",
      "squeeze_repeats('   x')",
      "squeeze_repeats('AAAaaa')",
      "squeeze_repeats('zzz1112')",
    ],
  ),
  task(
    'rotate-secret-message',
    'My kids love secret codes. Write a function that scrambles a message by shifting it by some amount, so that shifting back gets the original.',
    `
def rotate_message(message, shift):
    out = []
    for ch in message:
        if 'a' <= ch <= 'z':
            out.append(chr((ord(ch) - ord('a') + shift) % 26 + ord('a')))
        elif 'A' <= ch <= 'Z':
            out.append(chr((ord(ch) - ord('A') + shift) % 26 + ord('A')))
        elif '0' <= ch <= '9':
            # digits rotate too, within 0-9
            out.append(chr((ord(ch) - ord('0') + shift) % 10 + ord('0')))
        else:
            # spaces, punctuation and accented letters stay as they are
            out.append(ch)
    return ''.join(out)
`,
    [
      "rotate_message('abc', 1)",
      "rotate_message('xyz', 3)",
      "rotate_message('Hello, World!', 13)",
      "rotate_message('abc', -1)",
      "rotate_message('Room 101', 2)",
      "rotate_message('9 lives', 1)",
      "rotate_message('', 5)",
      "rotate_message('Zebra', 52)",
      "rotate_message('café', 1)",
      "rotate_message('Meet at 7:45', -27)",
    ],
  ),
  task(
    'grocery-budget-left',
    "I'm trying to stay on a weekly grocery budget. Write a function that takes my budget and what I bought and tells me what I have left, taking sales tax into account.",
    `
TAX_RATE = 0.08  # sales tax on everything that is not a basic food
# basic foods are tax free
TAX_FREE_ITEMS = {'bread', 'milk', 'eggs', 'fruit', 'vegetables', 'rice'}


def budget_left(budget, purchases):
    # each purchase is (item name, unit price, quantity)
    spent = 0.0
    for item, unit_price, quantity in purchases:
        cost = unit_price * quantity
        if item.strip().lower() not in TAX_FREE_ITEMS:
            cost *= 1 + TAX_RATE
        spent += cost
    # going over budget gives a negative number
    return round(budget - spent, 2)
`,
    [
      'budget_left(100, [])',
      "budget_left(100, [('milk', 1.2, 2)])",
      "budget_left(100, [('soap', 3.5, 2)])",
      "budget_left(50, [('Bread', 2.5, 1), ('chips', 3, 3)])",
      "budget_left(20, [('wine', 15, 2)])",
      "budget_left(75.5, [('eggs', 4.2, 1), ('rice', 6, 2), ('coffee', 9.99, 1)])",
      "budget_left(0, [('fruit', 1, 1)])",
      "budget_left(60, [(' MILK ', 1, 3), ('cheese', 7.25, 2)])",
      "budget_left(200, [('vegetables', 12.4, 1), ('meat', 25, 3), ('bread', 3, 2)])",
      "budget_left(10, [('candy', 1.25, 4)])",
    ],
  ),
  task(
    'thermostat-decision',
    'I am programming a smart thermostat. Given the room temperature and the temperature the user set, it needs to decide what to do.',
    `
DEAD_BAND = 0.5  # within this many degrees of the target nothing happens
MIN_TARGET = 16  # user targets outside 16-28 degrees are pulled back into that range
MAX_TARGET = 28


def thermostat_action(current, target):
    target = min(max(target, MIN_TARGET), MAX_TARGET)
    if abs(current - target) <= DEAD_BAND:
        return 'hold'
    return 'heat' if current < target else 'cool'
`,
    [
      'thermostat_action(20, 21)',
      'thermostat_action(21, 21)',
      'thermostat_action(20.5, 21)',
      'thermostat_action(22, 21)',
      'thermostat_action(21.6, 21)',
      'thermostat_action(15, 10)',
      'thermostat_action(16.4, 10)',
      'thermostat_action(29, 35)',
      'thermostat_action(27.5, 35)',
      'thermostat_action(18, 17.2)',
    ],
  ),
  task(
    'days-to-birthday',
    "Write me a function that counts how many days are left until someone's next birthday, given today's date and their birth date.",
    `
from datetime import date


def days_until_birthday(today, birthday):
    # both dates come as 'YYYY-MM-DD' strings
    now = date.fromisoformat(today)
    born = date.fromisoformat(birthday)

    def party_day(year):
        try:
            return date(year, born.month, born.day)
        except ValueError:
            # February 29 birthdays are celebrated on February 28 in other years
            return date(year, 2, 28)

    upcoming = party_day(now.year)
    if upcoming < now:
        upcoming = party_day(now.year + 1)
    # on the birthday itself the answer is 0
    return (upcoming - now).days
`,
    [
      "days_until_birthday('2024-03-01', '1990-03-01')",
      "days_until_birthday('2024-03-01', '1990-03-02')",
      "days_until_birthday('2024-03-02', '1990-03-01')",
      "days_until_birthday('2023-02-01', '2000-02-29')",
      "days_until_birthday('2024-02-01', '2000-02-29')",
      "days_until_birthday('2024-12-31', '1985-01-01')",
      "days_until_birthday('2023-03-01', '2004-02-29')",
      "days_until_birthday('2025-06-15', '2010-06-14')",
      "days_until_birthday('2025-01-01', '1999-12-31')",
      "days_until_birthday('2024-07-04', '1976-07-04')",
    ],
  ),
  task(
    'invoice-reference',
    'My invoices need reference numbers built from the year, a running number and the client name. Can you write the function that makes them?',
    `
def invoice_number(year, sequence, client):
    # the client code is the first three letters of the name, padded with X when the name is short
    letters = ''.join(c for c in client.upper() if c.isalpha())[:3]
    code = letters.ljust(3, 'X')
    # two-digit year followed by a five-digit running number
    return f'INV-{year % 100:02d}{sequence:05d}-{code}'
`,
    [
      "invoice_number(2024, 42, 'Acme Corp')",
      "invoice_number(2024, 1, 'Jo')",
      "invoice_number(2009, 12345, 'globex')",
      "invoice_number(2100, 7, 'A-1 Plumbing')",
      "invoice_number(1999, 99999, 'Initech')",
      "invoice_number(2025, 300, '3M')",
      "invoice_number(2030, 0, '')",
      "invoice_number(2024, 123456, 'Umbrella')",
      "invoice_number(2001, 5, 'o\\'neil')",
      "invoice_number(2024, 88, 'Big Blue Boats')",
    ],
  ),
  task(
    'coffee-order-price',
    'I own a coffee stand. Write a function that prices a drink from its size and the list of extras the customer wants.',
    `
SIZE_PRICES = {'small': 2.8, 'medium': 3.4, 'large': 3.9}  # sizes we do not sell are priced as medium
EXTRA_PRICE = 0.5  # syrups, extra shots, whipped cream
PLANT_MILK_PRICE = 0.7  # plant milks cost a bit more than other extras
PLANT_MILKS = {'oat', 'soy', 'almond'}
MAX_CHARGED_EXTRAS = 3  # only the three most expensive extras are charged, the rest are free


def coffee_price(size, extras):
    price = SIZE_PRICES.get(size, SIZE_PRICES['medium'])
    charges = sorted((PLANT_MILK_PRICE if e in PLANT_MILKS else EXTRA_PRICE for e in extras), reverse=True)
    price += sum(charges[:MAX_CHARGED_EXTRAS])
    return round(price, 2)
`,
    [
      "coffee_price('small', [])",
      "coffee_price('large', ['vanilla'])",
      "coffee_price('medium', ['oat'])",
      "coffee_price('venti', [])",
      "coffee_price('small', ['shot', 'shot', 'caramel'])",
      "coffee_price('small', ['shot', 'shot', 'caramel', 'cream'])",
      "coffee_price('large', ['shot', 'soy', 'cream', 'almond'])",
      "coffee_price('medium', ['oat', 'oat', 'oat', 'oat'])",
      "coffee_price('large', ['Oat'])",
      "coffee_price('tiny', ['hazelnut', 'soy'])",
    ],
  ),
  task(
    'weekly-wage',
    "I pay my part-time staff weekly from the hours they worked each day. I need a function that calculates the week's pay, overtime included.",
    `
REGULAR_HOURS = 40  # weekday hours beyond this are overtime
OVERTIME_MULTIPLIER = 1.5
SUNDAY_MULTIPLIER = 2.0  # Sunday hours are paid double and never count toward overtime


def weekly_pay(daily_hours, hourly_rate):
    # daily_hours runs Monday to Sunday; Sunday is the seventh entry
    weekday_hours = sum(daily_hours[:6])
    sunday_hours = daily_hours[6] if len(daily_hours) > 6 else 0
    regular = min(weekday_hours, REGULAR_HOURS)
    overtime = weekday_hours - regular
    pay = (regular + overtime * OVERTIME_MULTIPLIER + sunday_hours * SUNDAY_MULTIPLIER) * hourly_rate
    return round(pay, 2)
`,
    [
      'weekly_pay([8, 8, 8, 8, 8, 0, 0], 15)',
      'weekly_pay([10, 10, 10, 10, 10, 0, 0], 20)',
      'weekly_pay([0, 0, 0, 0, 0, 0, 8], 12)',
      'weekly_pay([8, 8, 8, 8, 8, 8, 0], 10)',
      'weekly_pay([4, 4, 4], 18.5)',
      'weekly_pay([], 25)',
      'weekly_pay([9, 9, 9, 9, 9, 0, 5], 16)',
      'weekly_pay([7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5], 14.2)',
      'weekly_pay([12, 12, 12, 12, 0, 0, 0], 11)',
      'weekly_pay([0, 0, 0, 0, 0, 0, 0], 30)',
    ],
  ),
  task(
    'newest-versions-first',
    'We publish lots of releases and the version strings are a bit inconsistent. Write a function that sorts a list of version strings properly.',
    `
def sort_versions(versions):
    def parts(version):
        # a leading v is ignored, missing parts count as 0 (1.2 is the same as 1.2.0)
        numbers = [int(p) for p in version.strip().lstrip('vV').split('.')]
        while len(numbers) < 3:
            numbers.append(0)
        return numbers

    # newest first; equal versions keep their original order
    return sorted(versions, key=parts, reverse=True)
`,
    [
      "sort_versions(['1.0.0', '2.0.0', '1.5.0'])",
      "sort_versions(['1.10.0', '1.9.0', '1.2.0'])",
      "sort_versions(['v1.2', '1.2.1', 'V1.1.9'])",
      'sort_versions([])',
      "sort_versions(['0.1', '0.0.9', '0.10'])",
      "sort_versions(['3', '2.99.99', '3.0.1'])",
      "sort_versions(['1.2', '1.2.0', 'v1.2.0'])",
      "sort_versions(['10.0.0', '9.9.9', 'v10.0.1'])",
      "sort_versions(['2.0.0'])",
      "sort_versions(['1.0.10', '1.0.2', '1.0.1'])",
    ],
  ),
  task(
    'most-used-words',
    'I want to see which words I overuse in my essays. Write a function that takes the text and how many words I want, and gives me the most frequent ones with their counts.',
    `
import re

MIN_LENGTH = 3  # short words like 'a', 'an', 'to' are not counted


def top_words(text, n):
    counts = {}
    for raw in re.findall(r"[a-z']+", text.lower()):
        word = raw.strip("'")
        if len(word) < MIN_LENGTH:
            continue
        counts[word] = counts.get(word, 0) + 1
    # most frequent first, ties in alphabetical order
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ranked[:n]
`,
    [
      "top_words('the cat and the hat', 2)",
      "top_words('', 3)",
      "top_words('A a a to to to be', 5)",
      "top_words('Dog dog DOG cat Cat bird', 2)",
      "top_words('zebra apple zebra apple mango', 3)",
      "top_words('it\\'s what it\\'s', 2)",
      "top_words('well, well, well... the end!', 1)",
      "top_words('one two three four five', 0)",
      "top_words('data-driven data driven', 4)",
      "top_words('Rain rain go away come again another day', 10)",
    ],
  ),
  task(
    'scale-a-recipe',
    'I often cook for a different number of people than a recipe is written for. Can you write a function that rescales the ingredient list?',
    `
import math

# units that do not scale: a pinch stays a pinch
FIXED_UNITS = {'pinch', 'to taste'}
# ingredients that only come whole
WHOLE_ITEMS = {'egg', 'eggs'}


def scale_recipe(ingredients, from_servings, to_servings):
    # each ingredient is (name, amount, unit)
    factor = to_servings / from_servings
    scaled = []
    for name, amount, unit in ingredients:
        if unit in FIXED_UNITS:
            new_amount = amount
        elif name in WHOLE_ITEMS:
            # eggs are rounded up to a whole egg
            new_amount = math.ceil(amount * factor)
        else:
            new_amount = round(amount * factor, 2)
        scaled.append((name, new_amount, unit))
    return scaled
`,
    [
      "scale_recipe([('flour', 200, 'g')], 4, 2)",
      "scale_recipe([('eggs', 3, 'piece')], 4, 2)",
      "scale_recipe([('salt', 1, 'pinch')], 2, 8)",
      'scale_recipe([], 4, 6)',
      "scale_recipe([('milk', 0.5, 'l'), ('egg', 1, 'piece')], 3, 7)",
      "scale_recipe([('pepper', 1, 'to taste'), ('butter', 30, 'g')], 2, 3)",
      "scale_recipe([('sugar', 100, 'g')], 3, 1)",
      "scale_recipe([('eggs', 2, 'piece'), ('oil', 15, 'ml')], 4, 10)",
      "scale_recipe([('water', 250, 'ml')], 1, 1)",
      "scale_recipe([('Eggs', 3, 'piece')], 6, 4)",
    ],
  ),
  task(
    'elevator-stop-order',
    'I am simulating an elevator for a class project. Given the floors people have requested, the current floor and the direction the elevator is moving, which order should it stop at them?',
    `
def elevator_order(requests, current_floor, going_up):
    floors = sorted(set(requests))
    above = [f for f in floors if f > current_floor]
    below = [f for f in floors if f < current_floor][::-1]
    # a request for the floor we are on is served first
    here = [current_floor] if current_floor in floors else []
    # keep going the way we are heading, then turn around
    return here + (above + below if going_up else below + above)
`,
    [
      'elevator_order([5, 2, 8], 4, True)',
      'elevator_order([5, 2, 8], 4, False)',
      'elevator_order([], 3, True)',
      'elevator_order([3, 3, 3], 3, False)',
      'elevator_order([1, 2, 3], 0, False)',
      'elevator_order([9, 7, 1, 4], 5, True)',
      'elevator_order([10, 10, 2, 2], 6, True)',
      'elevator_order([6, 1], 6, True)',
      'elevator_order([-1, 0, 2], 1, False)',
      'elevator_order([12, 15, 3], 20, True)',
    ],
  ),
  task(
    'mask-card-number',
    'On our receipts we should not print full card numbers. Write a function that takes a card number as the customer typed it and returns a safe version to print.',
    `
def mask_card(number):
    # customers type spaces and dashes, only digits matter
    digits = ''.join(ch for ch in number if ch.isdigit())
    if not 12 <= len(digits) <= 19:
        return 'invalid'
    # everything but the last four digits becomes a star, shown in groups of four
    masked = '*' * (len(digits) - 4) + digits[-4:]
    groups = [masked[i:i + 4] for i in range(0, len(masked), 4)]
    return ' '.join(groups)
`,
    [
      "mask_card('4111111111111111')",
      "mask_card('4111 1111 1111 1234')",
      "mask_card('4111-1111-1111-9876')",
      "mask_card('12345')",
      "mask_card('')",
      "mask_card('378282246310005')",
      "mask_card('123456789012')",
      "mask_card('12345678901234567890')",
      "mask_card('card 5555 5555 5555 4444')",
      "mask_card('1234567890123456789')",
    ],
  ),
  task(
    'cinema-ticket-total',
    'I run a small cinema. Given the ages of the people in a group and the day of the week, I need the total price for their tickets.',
    `
TODDLER_AGE = 3  # younger than this get in free
CHILD_AGE = 12  # younger than this pay the child price
SENIOR_AGE = 65  # this age and older pay the senior price
PRICES = {'child': 6.0, 'adult': 11.5, 'senior': 7.0}
DISCOUNT_DAY = 'tuesday'  # on this day every paid ticket is 3 dollars cheaper
DISCOUNT_DAY_REDUCTION = 3.0
GROUP_SIZE = 6  # groups of at least six people, toddlers included, get 10 percent off the total
GROUP_DISCOUNT = 0.10


def ticket_total(ages, day):
    total = 0.0
    for age in ages:
        if age < TODDLER_AGE:
            continue
        if age < CHILD_AGE:
            price = PRICES['child']
        elif age >= SENIOR_AGE:
            price = PRICES['senior']
        else:
            price = PRICES['adult']
        if day.lower() == DISCOUNT_DAY:
            price -= DISCOUNT_DAY_REDUCTION
        total += price
    if len(ages) >= GROUP_SIZE:
        total *= 1 - GROUP_DISCOUNT
    return round(total, 2)
`,
    [
      "ticket_total([30], 'Monday')",
      "ticket_total([30], 'Tuesday')",
      "ticket_total([2, 30], 'friday')",
      "ticket_total([11, 12], 'Sunday')",
      "ticket_total([64, 65], 'Saturday')",
      "ticket_total([], 'Monday')",
      "ticket_total([30, 30, 8, 8, 70, 1], 'Wednesday')",
      "ticket_total([30, 30, 8, 8, 70], 'TUESDAY')",
      "ticket_total([40, 40, 40, 40, 40, 40, 40], 'tuesday')",
      "ticket_total([0, 1, 2, 3], 'Thursday')",
    ],
  ),
  task(
    'battery-runtime',
    'I want to estimate how long my gadget battery lasts depending on what I am doing with it. Write a function from the battery capacity and the usage mode.',
    `
# average current draw in milliamps for each way of using the device
MODE_CURRENT = {'idle': 15, 'music': 120, 'video': 350, 'gaming': 600}
DEFAULT_MODE = 'music'  # modes we do not know are treated like music
USABLE_FRACTION = 0.85  # the last 15 percent of the battery is never used


def battery_hours(capacity_mah, mode):
    draw = MODE_CURRENT.get(mode.lower(), MODE_CURRENT[DEFAULT_MODE])
    hours = capacity_mah * USABLE_FRACTION / draw
    # one decimal is precise enough
    return round(hours, 1)
`,
    [
      "battery_hours(3000, 'idle')",
      "battery_hours(3000, 'music')",
      "battery_hours(3000, 'video')",
      "battery_hours(3000, 'gaming')",
      "battery_hours(4500, 'Video')",
      "battery_hours(4500, 'calls')",
      "battery_hours(0, 'idle')",
      "battery_hours(1200, 'GAMING')",
      "battery_hours(5000, 'navigation')",
      "battery_hours(2500, 'idle')",
    ],
  ),
  task(
    'triangle-kind',
    'For my geometry homework helper I need a function that says what kind of triangle three side lengths make.',
    `
def triangle_kind(a, b, c):
    x, y, z = sorted((a, b, c))
    # zero or negative sides, and flat triangles where two sides just add up to the third, are rejected
    if x <= 0 or x + y <= z:
        return 'not a triangle'
    if x == z:
        return 'equilateral'
    # a right triangle is reported as right even when two sides are equal
    if abs(x * x + y * y - z * z) < 1e-9:
        return 'right'
    if x == y or y == z:
        return 'isosceles'
    return 'scalene'
`,
    [
      'triangle_kind(3, 4, 5)',
      'triangle_kind(5, 5, 5)',
      'triangle_kind(2, 2, 3)',
      'triangle_kind(4, 5, 6)',
      'triangle_kind(1, 2, 3)',
      'triangle_kind(0, 1, 1)',
      'triangle_kind(1, 1, 2 ** 0.5)',
      'triangle_kind(10, 1, 1)',
      'triangle_kind(13, 5, 12)',
      'triangle_kind(-3, 4, 5)',
    ],
  ),
  task(
    'rain-gauge-summary',
    'I have daily readings from a rain gauge in my garden. Write a function that summarises a list of readings for me.',
    `
RAINY_DAY_MM = 1.0  # a day with at least this much rain counts as a rainy day


def rainfall_report(readings_mm):
    # negative readings are sensor glitches and are thrown away
    valid = [r for r in readings_mm if r >= 0]
    if not valid:
        return {'total': 0.0, 'wettest': 0.0, 'rainy_days': 0}
    return {
        'total': round(sum(valid), 1),
        'wettest': max(valid),
        'rainy_days': sum(1 for r in valid if r >= RAINY_DAY_MM),
    }
`,
    [
      'rainfall_report([])',
      'rainfall_report([0, 0, 0])',
      'rainfall_report([1.0, 0.9, 5.5])',
      'rainfall_report([-1, -2])',
      'rainfall_report([12.25, -3, 0.5, 1])',
      'rainfall_report([0.1, 0.2, 0.3])',
      'rainfall_report([20, 15, 30])',
      'rainfall_report([2.04, 2.04])',
      'rainfall_report([-0.5, 0, 0.99, 1.01])',
      'rainfall_report([3.3, 3.3, 3.3, 0])',
    ],
  ),
  task(
    'reorder-stock',
    'I manage a small shop. Given what I have in stock, how much of each item sells per day and how long deliveries take, tell me what I need to reorder.',
    `
SAFETY_MARGIN = 0.2  # keep 20 percent more than the delivery time needs


def items_to_reorder(stock, daily_sales, lead_days):
    urgent = []
    for item, on_hand in stock.items():
        per_day = daily_sales.get(item, 0)
        needed = per_day * lead_days * (1 + SAFETY_MARGIN)
        if on_hand < needed:
            # the items that run out soonest come first
            urgent.append((on_hand / per_day, item))
    urgent.sort()
    return [item for _, item in urgent]
`,
    [
      "items_to_reorder({'milk': 10}, {'milk': 5}, 2)",
      "items_to_reorder({'milk': 12}, {'milk': 5}, 2)",
      "items_to_reorder({'milk': 11}, {'milk': 5}, 2)",
      'items_to_reorder({}, {}, 3)',
      "items_to_reorder({'tea': 5, 'jam': 1}, {'tea': 1, 'jam': 1}, 7)",
      "items_to_reorder({'soap': 0}, {}, 5)",
      "items_to_reorder({'a': 3, 'b': 2, 'c': 100}, {'a': 2, 'b': 2, 'c': 1}, 4)",
      "items_to_reorder({'flour': 30}, {'flour': 4}, 6)",
      "items_to_reorder({'x': 0, 'y': 0}, {'x': 1, 'y': 3}, 1)",
      "items_to_reorder({'pens': 50, 'ink': 5}, {'pens': 10, 'ink': 0.5}, 5)",
    ],
  ),
  task(
    'pick-commute-mode',
    'Help me decide how to get to work each day. The function should take how far the trip is and whether it is raining, and tell me how to go.',
    `
WALK_LIMIT_KM = 2  # walk this far or less, but only when it is dry
BIKE_LIMIT_KM = 8  # bike this far or less, also only when it is dry
BUS_LIMIT_KM = 25  # the bus goes this far; anything longer means taking the car


def commute_mode(distance_km, raining):
    if distance_km <= WALK_LIMIT_KM and not raining:
        return 'walk'
    if distance_km <= BIKE_LIMIT_KM and not raining:
        return 'bike'
    if distance_km <= BUS_LIMIT_KM:
        return 'bus'
    return 'car'
`,
    [
      'commute_mode(1, False)',
      'commute_mode(1, True)',
      'commute_mode(2, False)',
      'commute_mode(2.1, False)',
      'commute_mode(8, False)',
      'commute_mode(8, True)',
      'commute_mode(8.5, False)',
      'commute_mode(25, True)',
      'commute_mode(25.1, False)',
      'commute_mode(0, True)',
    ],
  ),
  task(
    'multiple-choice-score',
    "I'm grading multiple-choice quizzes. I have each student's answers and the answer key; write the function that gives the score, with a penalty for guessing.",
    `
CORRECT_POINTS = 4
WRONG_PENALTY = 1  # points taken off for each wrong answer


def quiz_score(answers, key):
    score = 0
    for given, right in zip(answers, key):
        # blank answers (None or empty) neither gain nor lose points
        if given is None or str(given).strip() == '':
            continue
        # answers are compared without caring about case or spaces around them
        if str(given).strip().lower() == str(right).strip().lower():
            score += CORRECT_POINTS
        else:
            score -= WRONG_PENALTY
    # the total never goes below zero
    return max(score, 0)
`,
    [
      "quiz_score(['a', 'b', 'c'], ['a', 'b', 'c'])",
      "quiz_score(['a', 'b', 'c'], ['a', 'c', 'b'])",
      "quiz_score(['d', 'd', 'd'], ['a', 'b', 'c'])",
      "quiz_score([None, '', ' '], ['a', 'b', 'c'])",
      "quiz_score(['A ', ' b', 'C'], ['a', 'b', 'c'])",
      'quiz_score([], [])',
      "quiz_score(['a', 'b'], ['a', 'b', 'c', 'd'])",
      "quiz_score(['a', 'x', None, 'd', 'e'], ['a', 'b', 'c', 'd', 'f'])",
      'quiz_score([1, 2, 3], [1, 2, 4])',
      "quiz_score(['b', 'b', 'b', 'a'], ['a', 'a', 'a', 'a'])",
    ],
  ),
  task(
    'split-into-teams',
    'For gym class I want to split a list of student names into teams of a given size automatically.',
    `
def make_teams(names, team_size):
    # teams are filled in alphabetical order, ignoring upper/lower case
    ordered = sorted(names, key=str.lower)
    teams = [ordered[i:i + team_size] for i in range(0, len(ordered), team_size)]
    # nobody plays alone: a last team of one joins the team before it
    if len(teams) > 1 and len(teams[-1]) == 1:
        teams[-2].extend(teams.pop())
    return teams
`,
    [
      "make_teams(['d', 'c', 'b', 'a'], 2)",
      "make_teams(['d', 'c', 'b', 'a', 'e'], 2)",
      "make_teams(['Zed', 'amy', 'Bob'], 3)",
      'make_teams([], 3)',
      "make_teams(['solo'], 4)",
      "make_teams(['a', 'b', 'c', 'd', 'e', 'f', 'g'], 3)",
      "make_teams(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'], 3)",
      "make_teams(['Eve', 'bob', 'Carl', 'alice'], 1)",
      "make_teams(['x', 'y'], 5)",
      "make_teams(['mia', 'Liam', 'noah', 'Emma', 'olivia'], 2)",
    ],
  ),
  task(
    'short-duration-label',
    'In my app I show how long tasks took in a compact way. Write a function that turns a number of seconds into a short human label.',
    `
def format_duration(seconds):
    seconds = int(seconds)
    # under a minute we show seconds only
    if seconds < 60:
        return f'{seconds}s'
    hours, rest = divmod(seconds, 3600)
    # past a minute the leftover seconds are dropped, not rounded
    minutes = rest // 60
    if hours == 0:
        return f'{minutes}m'
    return f'{hours}h {minutes:02d}m'
`,
    [
      'format_duration(0)',
      'format_duration(59)',
      'format_duration(60)',
      'format_duration(119)',
      'format_duration(3599)',
      'format_duration(3600)',
      'format_duration(3661)',
      'format_duration(45.9)',
      'format_duration(86400)',
      'format_duration(7325)',
    ],
  ),
  task(
    'night-tariff-cost',
    'My power company charges a different rate at night. I have hourly meter readings and both rates; write a function that gives me the cost.',
    `
NIGHT_START = 22  # the night rate starts at 22:00
NIGHT_END = 6  # and runs until 06:00 the next morning


def electricity_cost(readings, day_rate, night_rate):
    # each reading is (hour of the day 0-23, kWh used in that hour)
    total = 0.0
    for hour, kwh in readings:
        is_night = hour >= NIGHT_START or hour < NIGHT_END
        total += kwh * (night_rate if is_night else day_rate)
    return round(total, 2)
`,
    [
      'electricity_cost([], 0.3, 0.1)',
      'electricity_cost([(12, 2)], 0.3, 0.1)',
      'electricity_cost([(23, 2)], 0.3, 0.1)',
      'electricity_cost([(22, 1), (21, 1)], 0.4, 0.2)',
      'electricity_cost([(6, 1), (5, 1)], 0.4, 0.2)',
      'electricity_cost([(0, 3.5), (13, 1.25)], 0.28, 0.12)',
      'electricity_cost([(h, 1) for h in range(24)], 0.3, 0.1)',
      'electricity_cost([(18, 4), (19, 4), (2, 10)], 0.35, 0.15)',
      'electricity_cost([(7, 0.333)], 0.3, 0.1)',
      'electricity_cost([(23, 1), (23, 1), (11, 1)], 1, 0.5)',
    ],
  ),
  task(
    'loyalty-card-points',
    'Our store has a loyalty card. Write the function that works out how many points a customer earned from their purchases this month.',
    `
POINTS_PER_DOLLAR = 1  # cents do not earn points
WEEKEND_DAYS = {'saturday', 'sunday'}
WEEKEND_MULTIPLIER = 2  # weekend purchases earn double
BONUS_THRESHOLD = 500  # a month with at least this many points gets a bonus
BONUS_POINTS = 50


def loyalty_points(purchases):
    # each purchase is (amount in dollars, day of the week)
    points = 0
    for amount, day in purchases:
        earned = int(amount) * POINTS_PER_DOLLAR
        if day.strip().lower() in WEEKEND_DAYS:
            earned *= WEEKEND_MULTIPLIER
        points += earned
    if points >= BONUS_THRESHOLD:
        points += BONUS_POINTS
    return points
`,
    [
      'loyalty_points([])',
      "loyalty_points([(10.99, 'Monday')])",
      "loyalty_points([(10.99, 'Saturday')])",
      "loyalty_points([(0.99, 'sunday')])",
      "loyalty_points([(250, 'Sunday')])",
      "loyalty_points([(249.5, 'Sunday'), (1, 'Friday')])",
      "loyalty_points([(499, 'tuesday'), (1, 'wednesday')])",
      "loyalty_points([(100, ' SATURDAY '), (20, 'Monday')])",
      "loyalty_points([(1000, 'Thursday')])",
      "loyalty_points([(5, 'Sat')])",
    ],
  ),
  task(
    'phone-number-format',
    'People type phone numbers into our form in every possible way. Write a function that cleans up a US phone number for display.',
    `
def format_phone(raw):
    digits = ''.join(c for c in raw if c.isdigit())
    # a leading country code 1 is dropped
    if len(digits) == 11 and digits.startswith('1'):
        digits = digits[1:]
    if len(digits) != 10:
        return 'invalid'
    return f'({digits[:3]}) {digits[3:6]}-{digits[6:]}'
`,
    [
      "format_phone('5551234567')",
      "format_phone('555-123-4567')",
      "format_phone('(555) 123 4567')",
      "format_phone('+1 555 123 4567')",
      "format_phone('15551234567')",
      "format_phone('25551234567')",
      "format_phone('123')",
      "format_phone('')",
      "format_phone('555.123.4567 ext')",
      "format_phone('1-800-555-0199')",
    ],
  ),
  task(
    'curve-exam-scores',
    'The exam was hard so I want to curve the scores. Write a function that takes the list of scores and returns the curved ones.',
    `
import math


def curve_scores(scores):
    if not scores:
        return []
    # everyone gets the same bump, enough to bring the best score up to 100; never a negative bump
    bump = max(100 - max(scores), 0)
    # results are whole numbers, halves round up, and nobody goes above 100
    return [min(100, math.floor(s + bump + 0.5)) for s in scores]
`,
    [
      'curve_scores([])',
      'curve_scores([80, 70, 60])',
      'curve_scores([100, 50])',
      'curve_scores([105, 90])',
      'curve_scores([88.5, 72.25, 60.5])',
      'curve_scores([0])',
      'curve_scores([45.5, 45.4, 90])',
      'curve_scores([99.5, 99.4])',
      'curve_scores([70, 70, 70])',
      'curve_scores([33.3, 66.6, 92.6])',
    ],
  ),
  task(
    'bus-seat-assignment',
    'I organise coach trips. Write a function that gives every passenger on a list a seat, given how many rows the bus has.',
    `
SEAT_LETTERS = 'ABCD'  # four seats a row


def assign_seats(passengers, rows):
    seats = {}
    capacity = rows * len(SEAT_LETTERS)
    for i, name in enumerate(passengers):
        # seats are given in list order, row by row; whoever does not fit is on standby
        if i >= capacity:
            seats[name] = 'standby'
        else:
            seats[name] = f'{i // len(SEAT_LETTERS) + 1}{SEAT_LETTERS[i % len(SEAT_LETTERS)]}'
    return seats
`,
    [
      "assign_seats(['Ann'], 10)",
      "assign_seats(['a', 'b', 'c', 'd', 'e'], 10)",
      "assign_seats(['a', 'b', 'c'], 0)",
      'assign_seats([], 5)',
      "assign_seats(['p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7', 'p8', 'p9'], 2)",
      "assign_seats(['x', 'y', 'z', 'w'], 1)",
      "assign_seats(['a', 'b', 'c', 'd', 'e'], 1)",
      "assign_seats(['Kim', 'Lee', 'Park', 'Choi', 'Jung', 'Kang'], 3)",
      "assign_seats(['n' + str(i) for i in range(13)], 3)",
      "assign_seats(['only'], 0)",
    ],
  ),
  task(
    'paint-cans-needed',
    'I am repainting some rooms and never know how much paint to buy. Write a function that tells me how many cans to get for a given wall area and number of coats.',
    `
import math

COVERAGE_M2_PER_LITRE = 10  # one litre covers ten square meters for one coat
BIG_CAN_LITRES = 2.5
SMALL_CAN_LITRES = 1
MAX_SMALL_CANS = 2  # needing more small cans than this means buying one more big can instead


def paint_cans(area_m2, coats):
    litres = area_m2 * coats / COVERAGE_M2_PER_LITRE
    big = int(litres // BIG_CAN_LITRES)
    rest = litres - big * BIG_CAN_LITRES
    small = math.ceil(round(rest / SMALL_CAN_LITRES, 9))
    if small > MAX_SMALL_CANS:
        big += 1
        small = 0
    # answer as (big cans, small cans)
    return (big, small)
`,
    [
      'paint_cans(0, 2)',
      'paint_cans(10, 1)',
      'paint_cans(25, 1)',
      'paint_cans(30, 2)',
      'paint_cans(45, 1)',
      'paint_cans(50, 2)',
      'paint_cans(12, 3)',
      'paint_cans(73, 2)',
      'paint_cans(20, 1)',
      'paint_cans(100, 3)',
    ],
  ),
  task(
    'longest-habit-streak',
    "I'm tracking a habit and I have the list of dates when I did it. I'd like a function that finds my longest streak.",
    `
from datetime import date, timedelta


def longest_streak(dates):
    # dates are 'YYYY-MM-DD' strings in any order; the same day twice counts once
    days = sorted({date.fromisoformat(d) for d in dates})
    best = 0
    current = 0
    previous = None
    for day in days:
        if previous is not None and day - previous == timedelta(days=1):
            current += 1
        else:
            current = 1
        best = max(best, current)
        previous = day
    return best
`,
    [
      'longest_streak([])',
      "longest_streak(['2024-01-01'])",
      "longest_streak(['2024-01-01', '2024-01-02', '2024-01-03'])",
      "longest_streak(['2024-01-03', '2024-01-01', '2024-01-02'])",
      "longest_streak(['2024-01-01', '2024-01-01', '2024-01-02'])",
      "longest_streak(['2024-01-01', '2024-01-03', '2024-01-05'])",
      "longest_streak(['2024-02-28', '2024-02-29', '2024-03-01'])",
      "longest_streak(['2023-12-31', '2024-01-01', '2024-01-05', '2024-01-06', '2024-01-07'])",
      "longest_streak(['2023-02-28', '2023-03-01'])",
      "longest_streak(['2024-05-10', '2024-05-11', '2024-05-13', '2024-05-14', '2024-05-15', '2024-05-16'])",
    ],
  ),
  task(
    'weather-warning',
    'I have a list of daily temperatures for the coming days. Write a function that tells me whether there is any weather warning to show.',
    `
FROST_BELOW = 0  # any day colder than this means frost
HEAT_ABOVE = 32  # a hot day is strictly above this
HEATWAVE_DAYS = 3  # this many hot days in a row make a heatwave


def weather_alert(temperatures):
    # frost is reported before heat
    if any(t < FROST_BELOW for t in temperatures):
        return 'frost'
    run = 0
    for t in temperatures:
        run = run + 1 if t > HEAT_ABOVE else 0
        if run >= HEATWAVE_DAYS:
            return 'heatwave'
    return 'normal'
`,
    [
      'weather_alert([])',
      'weather_alert([20, 22, 25])',
      'weather_alert([33, 34, 35])',
      'weather_alert([32, 33, 34])',
      'weather_alert([33, 34, 20, 35, 36])',
      'weather_alert([0, 10])',
      'weather_alert([-0.5, 40, 40, 40])',
      'weather_alert([33, 33, 33, 33])',
      'weather_alert([30, 32, 32, 32])',
      'weather_alert([35, 36, 31, 33, 34, 35])',
    ],
  ),
  task(
    'gift-wrap-length',
    'We wrap gifts at our shop. Write a function that says how much paper to cut for a box, from its length, width and height.',
    `
import math

OVERLAP_CM = 5  # extra paper so the edges overlap
ROLL_WIDTH_CM = 70  # boxes that need a wider sheet than the roll get 'too big'


def wrapping_paper(length_cm, width_cm, height_cm):
    # the sheet goes around the box the long way and folds over the ends
    sheet_length = 2 * (width_cm + height_cm) + OVERLAP_CM
    sheet_width = length_cm + height_cm + OVERLAP_CM
    if sheet_width > ROLL_WIDTH_CM:
        return 'too big'
    # paper is cut in whole centimeters, always rounding up
    return math.ceil(sheet_length)
`,
    [
      'wrapping_paper(30, 20, 10)',
      'wrapping_paper(10, 10, 10)',
      'wrapping_paper(60, 20, 5)',
      'wrapping_paper(60, 20, 6)',
      'wrapping_paper(12.5, 8.2, 3.1)',
      'wrapping_paper(100, 10, 10)',
      'wrapping_paper(0, 0, 0)',
      'wrapping_paper(40, 30, 25)',
      'wrapping_paper(55, 12.25, 10)',
      'wrapping_paper(20, 15.01, 4)',
    ],
  ),
  task(
    'study-group-slots',
    'Students in my class mark the hours they are free. Write a function that finds the hours when enough of them can meet.',
    `
MIN_ATTENDANCE = 0.5  # an hour works when at least half of the students are free


def study_slots(availability):
    # availability maps each student to the list of hours (0-23) they are free
    if not availability:
        return []
    counts = {}
    for hours in availability.values():
        for hour in set(hours):
            counts[hour] = counts.get(hour, 0) + 1
    needed = MIN_ATTENDANCE * len(availability)
    # earliest hour first
    return sorted(hour for hour, n in counts.items() if n >= needed)
`,
    [
      'study_slots({})',
      "study_slots({'a': [9, 10], 'b': [10, 11]})",
      "study_slots({'a': [9], 'b': [10], 'c': [11]})",
      "study_slots({'a': [9, 9, 9], 'b': [], 'c': []})",
      "study_slots({'a': [14, 15], 'b': [15, 16], 'c': [15], 'd': [8]})",
      "study_slots({'solo': [20, 7]})",
      "study_slots({'a': [], 'b': []})",
      "study_slots({'a': [1, 2, 3], 'b': [3, 2, 1], 'c': [2], 'd': [2, 3], 'e': [9]})",
      "study_slots({'x': [12], 'y': [12], 'z': [13]})",
      "study_slots({'a': [18, 19], 'b': [19, 20], 'c': [20, 18], 'd': [21]})",
    ],
  ),
];
