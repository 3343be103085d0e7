// The three multiple-choice questions of an identity challenge (docs/identity.md#challenges-in-detail): full name, date
// of birth, and the last four digits of a linked account or, with none linked, the amount of a
// cleared deposit. Four options each, one right.
//
// The right option must not be derivable from the response: ids are random, questions and
// options are shuffled, and for ordered values (dates, amounts) the right one's rank among the
// four is uniform, with wrong options as "round" as the right one.
import { randomBytes, randomInt } from 'node:crypto';

interface QuestionOption {
  id: string;
  label: string;
}

interface Question {
  id: string;
  prompt: string;
  options: QuestionOption[];
}

export interface GeneratedChallenge {
  questions: Question[];
  /** questionId → the right optionId. Kept in the database, never sent. */
  answerKey: Record<string, string>;
}

/** What the third question is about. */
export type KnowledgeFact =
  | { kind: 'accountMask'; mask: string; institutionName: string; otherMasks: string[] }
  | { kind: 'depositAmount'; amount: number; otherAmounts: number[] };

export interface ChallengeFacts {
  firstName: string;
  lastName: string;
  /** YYYY-MM-DD */
  dateOfBirth: string;
  fact: KnowledgeFact;
  now: Date;
}

const OPTIONS_PER_QUESTION = 4;
const WRONG = OPTIONS_PER_QUESTION - 1;

const FIRST_NAMES = [
  'James',
  'Mary',
  'Robert',
  'Patricia',
  'John',
  'Jennifer',
  'Michael',
  'Linda',
  'David',
  'Elizabeth',
  'William',
  'Barbara',
  'Richard',
  'Susan',
  'Joseph',
  'Jessica',
  'Thomas',
  'Sarah',
  'Charles',
  'Karen',
  'Daniel',
  'Lisa',
  'Matthew',
  'Nancy',
  'Anthony',
  'Sandra',
  'Mark',
  'Ashley',
  'Steven',
  'Emily',
  'Andrew',
  'Michelle',
  'Joshua',
  'Amanda',
  'Kevin',
  'Melissa',
  'Brian',
  'Laura',
  'Maria',
  'Jose',
  'Ana',
  'Luis',
  'Wei',
  'Mei',
  'Priya',
  'Arjun',
  'Fatima',
  'Omar',
  'Grace',
  'Samuel',
];

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

const DAY_MS = 86_400_000;

const newId = (prefix: string) => `${prefix}_${randomBytes(10).toString('hex')}`;

function shuffle<T>(items: T[]): T[] {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/** The label a date of birth is shown with, e.g. "December 10, 1990". */
export function dateLabel(isoDate: string): string {
  const [y, m, d] = isoDate.split('-').map(Number) as [number, number, number];
  return `${MONTHS[m - 1]} ${d}, ${y}`;
}

/** The label an amount is shown with, e.g. "$1,250.00". */
export function amountLabel(cents: number): string {
  const dollars = Math.floor(cents / 100).toLocaleString('en-US');
  return `$${dollars}.${String(cents % 100).padStart(2, '0')}`;
}

const fullNameLabel = (firstName: string, lastName: string) => `${firstName} ${lastName}`;

/**
 * Picks `count` distinct values by calling `draw` until enough are found that are not in
 * `taken`. Draws are random over a range much larger than `count`, so this ends quickly; the
 * bound only guards against a degenerate range.
 */
function distinct<T>(count: number, taken: Set<T>, draw: () => T): T[] {
  const out: T[] = [];
  for (let tries = 0; out.length < count && tries < 1000; tries++) {
    const v = draw();
    if (taken.has(v)) continue;
    taken.add(v);
    out.push(v);
  }
  if (out.length < count) throw new Error('could not draw enough distinct options');
  return out;
}

/**
 * Wrong values around an ordered right one. How many fall below it is uniform over 0..3, so its
 * rank gives nothing away, unless the range forbids: `canBelow` / `canAbove` say how many
 * distinct values each side can hold.
 */
function around(
  taken: Set<number>,
  side: { canBelow: number; canAbove: number },
  below: () => number,
  above: () => number,
): number[] {
  let nBelow = randomInt(OPTIONS_PER_QUESTION);
  nBelow = Math.max(WRONG - side.canAbove, Math.min(nBelow, side.canBelow));
  return [...distinct(nBelow, taken, below), ...distinct(WRONG - nBelow, taken, above)];
}

function question(prompt: string, right: string, wrong: string[]): { q: Question; answer: string } {
  const options = shuffle([right, ...wrong].map((label) => ({ id: newId('opt'), label })));
  const answer = options.find((o) => o.label === right)!.id;
  return { q: { id: newId('q'), prompt, options }, answer };
}

function nameQuestion(f: ChallengeFacts) {
  const taken = new Set([f.firstName.toLowerCase()]);
  const wrong = distinct(WRONG, taken, () => FIRST_NAMES[randomInt(FIRST_NAMES.length)]!.toLowerCase());
  const label = (first: string) => fullNameLabel(first, f.lastName);
  const wrongLabels = wrong.map((w) => label(FIRST_NAMES.find((n) => n.toLowerCase() === w)!));
  return question('Which of these is your full name?', label(f.firstName), wrongLabels);
}

function dateOfBirthQuestion(f: ChallengeFacts) {
  const right = Date.parse(`${f.dateOfBirth}T00:00:00Z`);
  const [minDays, maxDays] = [20, 1500];
  // No wrong date after yesterday: a date of birth in the future would give the others away.
  const roomAbove = Math.floor((f.now.getTime() - DAY_MS - right) / DAY_MS);
  const upTo = Math.min(maxDays, roomAbove);
  const wrong = around(
    new Set([right]),
    { canBelow: WRONG, canAbove: upTo >= minDays + 10 ? WRONG : 0 },
    () => right - randomInt(minDays, maxDays) * DAY_MS,
    () => right + randomInt(minDays, upTo) * DAY_MS,
  );
  const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  return question(
    'What is your date of birth?',
    dateLabel(f.dateOfBirth),
    wrong.map((ms) => dateLabel(iso(ms))),
  );
}

function maskQuestion(fact: Extract<KnowledgeFact, { kind: 'accountMask' }>) {
  const taken = new Set([fact.mask, ...fact.otherMasks]);
  const wrong = distinct(WRONG, taken, () => String(randomInt(10_000)).padStart(4, '0'));
  return question(`What are the last 4 digits of your ${fact.institutionName} account?`, fact.mask, wrong);
}

/** The largest "roundness" unit the amount has, keeping at least four units below it. */
function roundnessUnit(cents: number): number {
  for (const unit of [10_000, 1_000, 500, 100, 25, 10, 5]) {
    if (cents % unit === 0 && cents / unit >= 4) return unit;
  }
  return 1;
}

function amountQuestion(fact: Extract<KnowledgeFact, { kind: 'depositAmount' }>) {
  const right = fact.amount;
  const unit = roundnessUnit(right);
  const units = right / unit;
  const maxBelow = Math.min(units - 1, Math.ceil(units * 0.7));
  const amounts = around(
    new Set([right, ...fact.otherAmounts]),
    // Other deposits may take some of the values below; leave room for them.
    { canBelow: Math.max(0, Math.min(WRONG, maxBelow - fact.otherAmounts.length)), canAbove: WRONG },
    () => right - unit * randomInt(1, maxBelow + 1),
    () => right + unit * randomInt(1, Math.max(4, Math.ceil(units * 1.5)) + fact.otherAmounts.length + 1),
  );
  return question(
    'Which of these amounts did you deposit into your wallet in the last 90 days?',
    amountLabel(right),
    amounts.map(amountLabel),
  );
}

export function generateChallenge(f: ChallengeFacts): GeneratedChallenge {
  const parts = [
    nameQuestion(f),
    dateOfBirthQuestion(f),
    f.fact.kind === 'accountMask' ? maskQuestion(f.fact) : amountQuestion(f.fact),
  ];
  const shuffled = shuffle(parts);
  return {
    questions: shuffled.map((p) => p.q),
    answerKey: Object.fromEntries(shuffled.map((p) => [p.q.id, p.answer])),
  };
}
