/**
 * Prometheus text exposition (0.0.4, with Prometheus 3's quoted UTF-8 names)
 * and OpenMetrics 1.0, parsed by hand: the one npm parser
 * (parse-prometheus-text-format) returns strings, groups families by
 * adjacency and collapses labelled histograms.
 *
 * Samples are grouped into families by name, not by position: `x_bucket`,
 * `x_sum`, `x_count` and `x_created` belong to the histogram `x` wherever they
 * stand, `x_total` to the counter `x`; a sample no TYPE line claims is an
 * untyped family of its own. The page is untrusted: its size and line length
 * are bounded and anything that is not the grammar is an error naming the
 * line (ExpositionError), never a half-read page.
 */

export type FamilyType = 'counter' | 'gauge' | 'histogram' | 'gaugehistogram' | 'summary' | 'info' | 'stateset' | 'unknown' | 'untyped';

/** Label name -> value; a label named __proto__ is an own property like any other. */
export type Labels = Record<string, string>;

export interface Exemplar {
  readonly labels: Labels;
  readonly value: number;
  readonly timestampMs?: number;
}

export interface Sample {
  /** The sample's own name (`x_bucket`, `x_total`), its family's name plus a suffix or not. */
  readonly name: string;
  readonly labels: Labels;
  readonly value: number;
  /** Milliseconds since the epoch (OpenMetrics' seconds converted). */
  readonly timestampMs?: number;
  readonly exemplar?: Exemplar;
}

export interface Family {
  readonly name: string;
  type: FamilyType;
  help?: string;
  unit?: string;
  readonly samples: Sample[];
}

export type ExpositionFormat = 'prometheus' | 'openmetrics';

export interface ParseOptions {
  /** Default: prometheus (text 0.0.4). */
  readonly format?: ExpositionFormat;
  /** The whole page, in UTF-16 code units (a page of ASCII: bytes). Default 32 MiB. */
  readonly maxBytes?: number;
  /** One line. Default 64 KiB. */
  readonly maxLineLength?: number;
  /** Names the page in errors ("vllm http://127.0.0.1:8000/metrics"). */
  readonly source?: string;
  /**
   * Samples kept (families declared count too): past it the rest of the page
   * is counted, not read, so that a page of a million series costs its text
   * and this many samples, never a million objects. Default: no bound.
   */
  readonly maxSamples?: number;
  /**
   * The text is the start of a longer page whose reading stopped at a line
   * bound (fetch-page's maxLines): no # EOF is asked of it, and at least the
   * rest counts as dropped.
   */
  readonly cut?: boolean;
  /** The label sets of the source's last page, to be handed again (LabelSets); the source's own, page after page. */
  readonly labelSets?: LabelSets;
}

/** A label into a plain object, which keeps V8's fast properties; __proto__ would set its prototype instead of a label. */
function setLabel(labels: Labels, key: string, v: string): void {
  if (key === '__proto__') Object.defineProperty(labels, key, { value: v, enumerable: true, writable: true, configurable: true });
  else labels[key] = v;
}

/**
 * A copy of a string that holds nothing else: V8 keeps a slice of 13
 * characters or more of a string as a view into it, so a label value kept
 * from a page would keep the whole page. (' ' + s) is a new string made flat
 * when sliced; its slice holds that one, of s's length plus one.
 */
const own = (s: string): string => (' ' + s).slice(1);

/** The labels of every sample without a label set, where LabelSets hand labels again (frozen: the same object each page). */
const NO_LABELS: Labels = Object.freeze({});

/** A label set kept: its text from "{" to "}", and what it reads as. */
interface LabelSet {
  readonly text: string;
  readonly labels: Labels;
  /** The last page that had it. */
  round: number;
}

/**
 * Label sets kept from one page of a source to its next: a sample whose label
 * text (from its "{" to its "}") is one the last page had gets the same
 * Labels object, frozen. A page of thousands of series that do not change
 * then makes no labels again, and what a converter makes of a series (its
 * attributes) can be kept by that object (a WeakMap) and handed again. Held:
 * the sets of the last page and of the one being read (each bounded by
 * maxSamples), as copies, never slices of a page.
 *
 * A page lists its series in the same order each time: the set the last page
 * had next is compared first; the text's lookup is for the others.
 */
export class LabelSets {
  private readonly sets = new Map<string, LabelSet>();
  /** The sets in the last page's order up to `at`, this page's before it. */
  private readonly order: LabelSet[] = [];
  private at = 0;
  private round = 0;
  private om: boolean | undefined;

  /** A new page: what the last page did not have is forgotten. */
  begin(om: boolean): void {
    // a page of the other format reads label text otherwise (blanks): nothing carries over
    if (om !== this.om) {
      this.sets.clear();
      this.at = 0;
      this.om = om;
    }
    this.sets.forEach((v, k) => {
      if (v.round !== this.round) this.sets.delete(k);
    });
    this.order.length = this.at;
    this.at = 0;
    this.round++;
  }

  /** The labels at t[k] (a "{"), when they are the ones the last page had next; undefined: look them up. */
  next(t: string, k: number): LabelSet | undefined {
    const s = this.order[this.at];
    // a slice and === (one compare of the whole text): t.startsWith(text, k) measured half as fast on a page
    if (s === undefined || t.slice(k, k + s.text.length) !== s.text) return undefined;
    s.round = this.round;
    this.at++;
    return s;
  }

  get(text: string): Labels | undefined {
    const s = this.sets.get(text);
    if (!s) return undefined;
    s.round = this.round;
    this.order[this.at++] = s;
    return s.labels;
  }

  /** Keeps labels read from `text` (both slices of the page): a frozen copy of them, which it returns. */
  keep(text: string, labels: Labels): Labels {
    const copy: Labels = {};
    for (const k of Object.keys(labels)) setLabel(copy, k, own(labels[k]!));
    const s = { text: own(text), labels: Object.freeze(copy), round: this.round };
    this.sets.set(s.text, s);
    this.order[this.at++] = s;
    return copy;
  }

  get size(): number {
    return this.sets.size;
  }
}

/** A parsed page and what of it was not kept. */
export interface ParsedPage {
  readonly families: Family[];
  /** Samples kept. */
  readonly samples: number;
  /** Sample lines past maxSamples, counted and not read. */
  readonly dropped: number;
}

export class ExpositionError extends Error {
  constructor(
    readonly line: number,
    readonly reason: string,
    source?: string,
  ) {
    super(`${source ? `${source}: ` : ''}line ${line}: ${reason}`);
    this.name = 'ExpositionError';
  }
}

export const DEFAULT_MAX_BYTES = 32 * 1024 * 1024;
export const DEFAULT_MAX_LINE = 64 * 1024;

/** The content type's format: OpenMetrics only when the server says so (Prometheus' own rule). */
export function formatOf(contentType: string | undefined): ExpositionFormat {
  return contentType && /^\s*application\/openmetrics-text\b/i.test(contentType) ? 'openmetrics' : 'prometheus';
}

const TYPES = new Set<FamilyType>(['counter', 'gauge', 'histogram', 'gaugehistogram', 'summary', 'info', 'stateset', 'unknown', 'untyped']);

/** The sample-name suffixes each type owns (besides the bare name). */
const SUFFIXES: Partial<Record<FamilyType, readonly string[]>> = {
  counter: ['_total', '_created'],
  histogram: ['_bucket', '_count', '_sum', '_created'],
  gaugehistogram: ['_bucket', '_gcount', '_gsum'],
  summary: ['_count', '_sum', '_created'],
  info: ['_info'],
};
const ALL_SUFFIXES = ['_bucket', '_count', '_sum', '_total', '_created', '_gcount', '_gsum', '_info'];

// character codes
const CR = 13;
const SP = 32;
const TAB = 9;
const HASH = 35;
const QUOTE = 34;
const BACKSLASH = 92;
const LBRACE = 123;
const RBRACE = 125;
const COMMA = 44;
const EQ = 61;

/** ASCII classes, a table lookup per character: bit 1 label start, 2 label char, 4 name start, 8 name char. */
const CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const letter = (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95;
  const digit = c >= 48 && c <= 57;
  CLASS[c] = (letter ? 1 | 2 | 4 | 8 : 0) | (digit ? 2 | 8 : 0) | (c === 58 ? 4 | 8 : 0);
}
const isNameStart = (c: number) => c < 128 && (CLASS[c]! & 4) !== 0;
const isNameChar = (c: number) => c < 128 && (CLASS[c]! & 8) !== 0;
const isLabelStart = (c: number) => c < 128 && (CLASS[c]! & 1) !== 0;
const isLabelChar = (c: number) => c < 128 && (CLASS[c]! & 2) !== 0;

const SPECIAL: Record<string, number> = {
  nan: NaN,
  inf: Infinity,
  '+inf': Infinity,
  '-inf': -Infinity,
  infinity: Infinity,
  '+infinity': Infinity,
  '-infinity': -Infinity,
};

/**
 * A float as Go's strconv.ParseFloat reads it (Prometheus' parser), decimal
 * only: Number() also reads 0x.., 0b.., 0o.. and "Infinity"; ParseFloat's
 * "inf"/"infinity"/"nan" in any case. An overflow (1e400) is an error there.
 */
const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);

export function parseNumber(s: string): number | undefined {
  return parseNumberIn(s, 0, s.length);
}

/** parseNumber() of t.slice(a, b), reading the common number in place (a page's every value: no string made). */
function parseNumberIn(t: string, a: number, b: number): number | undefined {
  const c = t.charCodeAt(a);
  if ((c >= 48 && c <= 57) || c === 46 || c === 45 || c === 43) {
    let plain = true;
    for (let i = a + 1; i < b; i++) {
      const d = t.charCodeAt(i);
      if (!((d >= 48 && d <= 57) || d === 46 || d === 101 || d === 69 || d === 43 || d === 45)) {
        plain = false;
        break;
      }
    }
    if (plain) {
      // digits with one point, at most 15 characters (so under 2^53): their integer over a power of ten is one correctly rounded
      // division, the double Number() gives, without its general parse
      const n = b - a;
      if (n <= 15 && c !== 45 && c !== 43) {
        let m = 0;
        let point = -1;
        let ok = true;
        for (let i = 0; i < n; i++) {
          const d = t.charCodeAt(a + i);
          if (d === 46) {
            if (point >= 0) {
              ok = false;
              break;
            }
            point = i;
          } else if (d >= 48 && d <= 57) m = m * 10 + (d - 48);
          else {
            ok = false;
            break;
          }
        }
        if (ok && n > (point >= 0 ? 1 : 0)) return point < 0 || point === n - 1 ? m : m / POW10[n - 1 - point]!;
      }
      const v = Number(t.slice(a, b));
      return Number.isFinite(v) ? v : undefined;
    }
  }
  return SPECIAL[t.slice(a, b).toLowerCase()];
}

class Parser {
  private readonly text: string;
  private readonly om: boolean;
  private readonly maxLine: number;
  private readonly source: string | undefined;
  readonly families = new Map<string, Family>();
  /** Sample name -> its family, worked out once per name. */
  private readonly owner = new Map<string, Family>();
  private lineNo = 0;
  private lastName = '';
  /** The family of the last sample name, and whether that name is a histogram's bucket (which needs le). */
  private lastOwner: { name: string; f: Family | undefined; le: boolean } = { name: '', f: undefined, le: false };
  /** Where the last quoted string ended (quoted() returns the string alone: no tuple per label). */
  private next = 0;
  /** The page's next backslash at or after the last quoted string (-1: none left). */
  private nextBs = -2;
  private nextBrace = -2;
  private nextSpace = -2;
  /** The label names of the last label set, in order: the next one likely has them again. */
  private lastKeys: string[] = [];
  /** The label names of the set being read (its duplicates are an error). */
  private readonly setKeys: string[] = [];
  private eof = false;
  private readonly sets: LabelSets | undefined;
  /** The page's next "}" at or after the last label set looked up (-1: none left). */
  private nextClose = -2;
  private readonly cut: boolean;
  private readonly maxSamples: number;
  kept = 0;
  dropped = 0;
  /** Samples that may be kept: maxSamples less the families declared (one compare a sample). */
  private room: number;
  /** maxSamples reached: what is left of the page is counted, not read. */
  private full: boolean;

  constructor(text: string, o: ParseOptions) {
    this.text = text;
    this.om = o.format === 'openmetrics';
    this.maxLine = o.maxLineLength ?? DEFAULT_MAX_LINE;
    this.source = o.source;
    this.maxSamples = o.maxSamples ?? Infinity;
    this.cut = o.cut === true;
    this.sets = o.labelSets;
    this.sets?.begin(this.om);
    this.room = this.maxSamples;
    this.full = this.maxSamples <= 0;
  }

  fail(reason: string): never {
    throw new ExpositionError(this.lineNo, reason, this.source);
  }

  run(): Map<string, Family> {
    const t = this.text;
    const n = t.length;
    let start = 0;
    while (start < n) {
      let nl = t.indexOf('\n', start);
      if (nl < 0) nl = n;
      this.lineNo++;
      if (nl - start > this.maxLine) this.fail(`line longer than ${this.maxLine} characters`);
      let e = nl;
      if (e > start && t.charCodeAt(e - 1) === CR) e--;
      if (this.eof) this.fail('text after # EOF');
      if (this.full) this.skipped(start, e);
      else if (e > start) this.line(start, e);
      else if (this.om) this.fail('empty line (OpenMetrics allows none)');
      start = nl + 1;
    }
    // the unread rest of a cut page: one, however many series it held
    if (this.cut) this.dropped++;
    else if (this.om && !this.eof)
      throw new ExpositionError(this.lineNo, 'no # EOF at the end (OpenMetrics requires it: the page may be cut short)', this.source);
    return this.families;
  }

  /** A line past maxSamples: a sample is counted, # EOF still ends the page, nothing else is looked at. */
  private skipped(s: number, e: number): void {
    const t = this.text;
    let i = s;
    while (i < e && (t.charCodeAt(i) === SP || t.charCodeAt(i) === TAB)) i++;
    if (i === e) return;
    if (t.charCodeAt(i) !== HASH) this.dropped++;
    else if (this.om && e - s === 5 && t.startsWith('# EOF', s)) this.eof = true;
  }

  private line(s: number, e: number): void {
    const t = this.text;
    const c = t.charCodeAt(s);
    if (c === HASH) return this.comment(s, e);
    if (c === SP || c === TAB) {
      if (this.om) this.fail('a line starts with white space');
      // Prometheus text allows leading blanks, before a comment too (its lexer skips them anywhere); a blank line is nothing
      let i = s;
      while (i < e && (t.charCodeAt(i) === SP || t.charCodeAt(i) === TAB)) i++;
      if (i === e) return;
      return t.charCodeAt(i) === HASH ? this.comment(i, e) : this.sample(i, e);
    }
    this.sample(s, e);
  }

  private comment(s: number, e: number): void {
    const t = this.text;
    if (this.om && e - s === 5 && t.startsWith('# EOF', s)) {
      this.eof = true;
      return;
    }
    // "# HELP name text", "# TYPE name type", "# UNIT name unit"; any other comment is ignored (Prometheus text)
    let i = s + 1;
    if (t.charCodeAt(i) !== SP && t.charCodeAt(i) !== TAB) {
      if (this.om) this.fail('a comment line that is not # HELP, # TYPE, # UNIT or # EOF');
      return;
    }
    while (i < e && (t.charCodeAt(i) === SP || t.charCodeAt(i) === TAB)) i++;
    const kw = t.slice(i, i + 4);
    const after = t.charCodeAt(i + 4);
    const known = (kw === 'HELP' || kw === 'TYPE' || kw === 'UNIT') && (after === SP || after === TAB || i + 4 === e);
    if (!known || (kw === 'UNIT' && !this.om)) {
      if (this.om) this.fail(`an unknown comment "${t.slice(s, Math.min(e, s + 20))}"`);
      return;
    }
    i += 4;
    if (i === e) {
      if (this.om) this.fail(`# ${kw} without a metric name`);
      return; // Prometheus: a bare "# HELP" is a comment
    }
    i = this.om ? i + 1 : this.skipBlanks(i, e);
    const [name, j] = this.metricName(i, e, `the # ${kw} line's metric name`);
    let k = j;
    let rest = '';
    if (k < e) {
      const c = t.charCodeAt(k);
      if (c !== SP && (this.om || c !== TAB))
        this.fail(`# ${kw}: ${c === TAB ? 'a tab where OpenMetrics puts one space' : 'no space'} after the metric name`);
      k++;
      if (!this.om) while (k < e && (t.charCodeAt(k) === SP || t.charCodeAt(k) === TAB)) k++;
      rest = t.slice(k, e);
    } else if (this.om) this.fail(`# ${kw} ${name}: no space and text after the metric name`);
    if (kw === 'TYPE') {
      const type = (this.om ? rest : rest.trim()) as FamilyType;
      if (
        !TYPES.has(type) ||
        (this.om && type === 'untyped') ||
        (!this.om && (type === 'gaugehistogram' || type === 'info' || type === 'stateset'))
      )
        this.fail(`# TYPE ${name}: unknown type "${rest.slice(0, 40)}"`);
      const had = this.families.get(name);
      if (had && this.provisional.has(had) && had.samples.length === 0) {
        // HELP came first: TYPE sets the type (the spec puts TYPE first, real pages do not always)
        had.type = type;
        this.provisional.delete(had);
        this.owner.clear();
        this.lastOwner = { name: '', f: undefined, le: false };
        return;
      }
      if (had) {
        if (had.type !== type || had.samples.length)
          this.fail(`# TYPE ${name} ${type} after ${had.samples.length ? 'its samples' : `# TYPE ${had.type}`}`);
        return;
      }
      this.declare(name, type);
    } else {
      const fam = this.families.get(name) ?? this.declare(name, this.om ? 'unknown' : 'untyped', true);
      if (kw === 'HELP') {
        // Prometheus' scraper takes a repeated HELP (the first stands here); OpenMetrics forbids it
        if (fam.help !== undefined && this.om) this.fail(`a second # HELP for ${name}`);
        fam.help ??= unescapeText(rest, this.om);
      } else {
        if (fam.unit !== undefined) this.fail(`a second # UNIT for ${name}`);
        if (rest && !name.endsWith(`_${rest}`)) this.fail(`# UNIT ${name} ${rest}: the name must end in _${rest}`);
        fam.unit = rest;
      }
    }
  }

  /** A family by its declared name; provisional: made by HELP or UNIT before any TYPE. */
  private declare(name: string, type: FamilyType, provisional = false): Family {
    const f: Family = { name, type, samples: [] };
    this.families.set(name, f);
    // a page of declarations alone (no samples) is bounded too
    this.room = this.maxSamples - this.families.size;
    if (this.kept >= this.room) this.full = true;
    if (provisional) this.provisional.add(f);
    this.owner.clear();
    this.lastOwner = { name: '', f: undefined, le: false };
    return f;
  }
  private readonly provisional = new Set<Family>();

  /** A metric name, bare or (Prometheus 3) quoted; returns it and the index after it. */
  private metricName(i: number, e: number, what: string): [string, number] {
    const t = this.text;
    if (t.charCodeAt(i) === QUOTE) return [this.quoted(i, e, what), this.next];
    const s = i;
    if (i >= e || !isNameStart(t.charCodeAt(i))) this.fail(`${what}: "${t.slice(s, Math.min(e, s + 30))}" is not a metric name`);
    i++;
    while (i < e && isNameChar(t.charCodeAt(i))) i++;
    return [t.slice(s, i), i];
  }

  /** A quoted string at i (the opening quote); returns the unescaped text and the index after the closing quote. */
  /** what: names the string in an error (a label's name when label is set: built only on failure). */
  private quoted(i: number, e: number, name: string, label = false): string {
    const t = this.text;
    const s = i + 1;
    // the common case: no escape before the closing quote. The next backslash of the page is found once and kept
    // until passed (a search per string would read the rest of the page each time)
    if (this.nextBs < s && this.nextBs !== -1) this.nextBs = t.indexOf('\\', s);
    const q = t.indexOf('"', s);
    if (q >= 0 && q < e && (this.nextBs === -1 || this.nextBs > q)) {
      this.next = q + 1;
      return t.slice(s, q);
    }
    let out = '';
    let k = s;
    for (let j = s; j < e; j++) {
      const c = t.charCodeAt(j);
      if (c === QUOTE) {
        this.next = j + 1;
        return out + t.slice(k, j);
      }
      if (c === BACKSLASH) {
        if (j + 1 >= e) break;
        const d = t.charCodeAt(j + 1);
        out += t.slice(k, j);
        if (d === BACKSLASH) out += '\\';
        else if (d === QUOTE) out += '"';
        else if (d === 110) out += '\n';
        // an unknown escape (\z, \t) is kept as it stands: Prometheus' text and OpenMetrics lexers and
        // prometheus_client's OpenMetrics parser all read it so (the OpenMetrics suite's escaping cases)
        else out += `\\${t[j + 1]}`;
        j++;
        k = j + 1;
      }
    }
    this.fail(`${label ? `label ${name}` : name}: a quoted string without its closing quote`);
  }

  private sample(s: number, e: number): void {
    const t = this.text;
    let name: string;
    let i: number;
    let labels: Labels;
    if (t.charCodeAt(s) === LBRACE) {
      // Prometheus 3: {"name", labels...}
      labels = {};
      i = s;
      name = '';
      i = this.labelSet(i, e, labels, (n) => (name = n));
      if (!name) this.fail('a sample without a metric name');
    } else {
      // pages repeat a name over many lines: the last one's string (hashed once) serves when it is this one
      // pages repeat a name over many lines: where the name ends is found by native searches, and a name equal to
      // the last one (checked then) is known good and keeps its string, hashed once for the family lookup
      // the page's next "{" and next space, each searched once and kept until passed: a search per line that ran
      // to the end of the page (a page with no label set) would read the page once per line
      if (this.nextBrace !== -1 && this.nextBrace < s) this.nextBrace = t.indexOf('{', s);
      if (this.nextSpace !== -1 && this.nextSpace < s) this.nextSpace = t.indexOf(' ', s);
      let end = this.nextBrace < 0 || this.nextBrace > e ? e : this.nextBrace;
      if (this.nextSpace >= 0 && this.nextSpace < end) end = this.nextSpace;
      const last = this.lastName;
      if (end - s === last.length && last && t.slice(s, end) === last) {
        name = last;
        i = end;
      } else {
        [name, i] = this.metricName(s, e, 'a sample');
        this.lastName = name;
      }
      let k = i;
      // Prometheus text allows blanks between the name and its labels
      if (!this.om) while (k < e && (t.charCodeAt(k) === SP || t.charCodeAt(k) === TAB)) k++;
      if (t.charCodeAt(k) === LBRACE) {
        labels = this.labelsAt(k, e);
        i = this.next;
      } else labels = this.sets ? NO_LABELS : {};
    }
    // value: after a blank, or (Prometheus text, whose lexer reads a value from the "}" on) right after the labels
    const sep = t.charCodeAt(i);
    if (i >= e) this.fail(`${name}: no value`);
    if (sep !== SP && sep !== TAB && (this.om || t.charCodeAt(i - 1) !== RBRACE))
      this.fail(`${name}: unexpected "${t[i]}" after the ${t.charCodeAt(i - 1) === RBRACE ? 'labels' : 'name'}`);
    if (this.om) {
      if (sep !== SP) this.fail(`${name}: a tab before the value`);
      i++;
    } else while (i < e && (t.charCodeAt(i) === SP || t.charCodeAt(i) === TAB)) i++;
    let j = i;
    while (j < e && t.charCodeAt(j) !== SP && t.charCodeAt(j) !== TAB) j++;
    if (j === i) this.fail(`${name}: no value`);
    const value = parseNumberIn(t, i, j);
    if (value === undefined) this.fail(`${name}: "${t.slice(i, Math.min(j, i + 40))}" is not a number`);
    let timestampMs: number | undefined;
    let exemplar: Exemplar | undefined;
    i = j;
    if (i < e) {
      // OpenMetrics: one space between the parts, none at the end (Prometheus' OpenMetrics lexer refuses it too)
      if (this.om && t.charCodeAt(e - 1) === SP) this.fail(`${name}: a space at the end of the line`);
      i = this.skipBlanks(i, e);
      if (i < e && t.charCodeAt(i) !== HASH) {
        j = i;
        while (j < e && t.charCodeAt(j) !== SP && t.charCodeAt(j) !== TAB) j++;
        timestampMs = this.timestamp(t.slice(i, j), name);
        i = j < e ? this.skipBlanks(j, e) : e;
      }
      if (i < e) {
        if (t.charCodeAt(i) !== HASH)
          this.fail(
            `${name}: unexpected "${t.slice(i, Math.min(e, i + 20))}" after the ${timestampMs === undefined ? 'value' : 'timestamp'}`,
          );
        if (!this.om) this.fail(`${name}: an exemplar ("# {...}") in Prometheus text: only OpenMetrics has them`);
        exemplar = this.exemplar(i, e, name);
      }
    }
    const fam = this.familyOf(name, labels);
    const sample: Sample = exemplar
      ? { name, labels, value, timestampMs, exemplar }
      : timestampMs !== undefined
        ? { name, labels, value, timestampMs }
        : { name, labels, value };
    fam.samples.push(sample);
    if (++this.kept >= this.room) this.full = true;
  }

  private skipBlanks(i: number, e: number): number {
    const t = this.text;
    if (this.om) {
      if (t.charCodeAt(i) !== SP) this.fail('a tab where OpenMetrics puts one space');
      return i + 1;
    }
    while (i < e && (t.charCodeAt(i) === SP || t.charCodeAt(i) === TAB)) i++;
    return i;
  }

  private timestamp(s: string, name: string): number {
    if (this.om) {
      const v = parseNumber(s);
      if (v === undefined || !Number.isFinite(v)) this.fail(`${name}: timestamp "${s.slice(0, 40)}" is not a number of seconds`);
      return v * 1000;
    }
    // Prometheus text: an integer of milliseconds
    if (!/^-?\d{1,19}$/.test(s)) this.fail(`${name}: timestamp "${s.slice(0, 40)}" is not an integer of milliseconds`);
    const v = Number(s);
    if (!Number.isSafeInteger(v)) this.fail(`${name}: timestamp ${s} is out of range`);
    return v;
  }

  private exemplar(i: number, e: number, name: string): Exemplar {
    const t = this.text;
    // " # {labels} value [timestamp]"
    if (t.charCodeAt(i + 1) !== SP || t.charCodeAt(i + 2) !== LBRACE) this.fail(`${name}: an exemplar must be "# {labels} value"`);
    const labels: Labels = {};
    let j = this.labelSet(i + 2, e, labels, undefined);
    if (t.charCodeAt(j) !== SP) this.fail(`${name}: the exemplar has no value`);
    j++;
    let k = j;
    while (k < e && t.charCodeAt(k) !== SP) k++;
    const value = parseNumber(t.slice(j, k));
    if (value === undefined) this.fail(`${name}: exemplar value "${t.slice(j, Math.min(k, j + 40))}" is not a number`);
    let len = 0;
    for (const key in labels) len += key.length + labels[key]!.length;
    if (len > 128) this.fail(`${name}: the exemplar's labels are ${len} characters (OpenMetrics allows 128)`);
    if (k === e) return { labels, value };
    const ts = t.slice(k + 1, e);
    const v = parseNumber(ts);
    if (v === undefined || !Number.isFinite(v)) this.fail(`${name}: exemplar timestamp "${ts.slice(0, 40)}" is not a number of seconds`);
    return { labels, value, timestampMs: v * 1000 };
  }

  /**
   * A sample's label set at k (its "{"), the one the last page had for the
   * same text when there are LabelSets; this.next is where it ends.
   */
  private labelsAt(k: number, e: number): Labels {
    const sets = this.sets;
    if (!sets) {
      const labels: Labels = {};
      this.next = this.labelSet(k, e, labels, undefined);
      return labels;
    }
    const t = this.text;
    const same = sets.next(t, k);
    if (same) {
      this.next = k + same.text.length;
      return same.labels;
    }
    // the first "}" after the "{": the set's end, unless one is inside a value (then the text is no set's, and the
    // set is read whole). Searched once and kept until passed, as the other searches of the page
    if (this.nextClose !== -1 && this.nextClose < k) this.nextClose = t.indexOf('}', k);
    const close = this.nextClose;
    const text = close >= 0 && close < e ? t.slice(k, close + 1) : undefined;
    const had = text === undefined ? undefined : sets.get(text);
    if (had) {
      this.next = close + 1;
      return had;
    }
    const labels: Labels = {};
    this.next = this.labelSet(k, e, labels, undefined);
    // the same text read the same way: the set is that text's (one ending at another "}" is looked up by a shorter text)
    return text !== undefined && this.next === close + 1 ? sets.keep(text, labels) : labels;
  }

  /**
   * "{a="x",b="y"}" at i (the brace). Prometheus 3 allows quoted label names
   * and one bare quoted string, the metric name (given to `onName`), anywhere
   * among the labels as Prometheus' parsers take it. In Prometheus text the
   * comma between two pairs may be left out, as Prometheus' parser allows.
   */
  private labelSet(i: number, e: number, labels: Labels, onName: ((n: string) => void) | undefined): number {
    const t = this.text;
    i++;
    let first = true;
    let named = false;
    let n = 0;
    for (;;) {
      if (!this.om) while (i < e && (t.charCodeAt(i) === SP || t.charCodeAt(i) === TAB)) i++;
      if (i >= e) this.fail('labels without their closing "}"');
      let c = t.charCodeAt(i);
      if (c === RBRACE) {
        if (this.om && !first && t.charCodeAt(i - 1) === COMMA) this.fail('a comma before "}" (OpenMetrics allows none)');
        return i + 1;
      }
      let key: string;
      if (c === QUOTE) {
        const q = this.quoted(i, e, 'a quoted name');
        i = this.next;
        if (!this.om) while (i < e && (t.charCodeAt(i) === SP || t.charCodeAt(i) === TAB)) i++;
        c = t.charCodeAt(i);
        if (c !== EQ) {
          // the bare quoted string: the metric name, once
          if (!onName || named) this.fail(`"${q.slice(0, 40)}": a ${named ? 'second ' : ''}quoted metric name where a label belongs`);
          onName(q);
          named = true;
          first = false;
          if (c === COMMA) i++;
          else if (c !== RBRACE) this.fail(`unexpected "${t[i] ?? ''}" after the quoted metric name`);
          continue;
        }
        key = q;
      } else {
        const s = i;
        if (!isLabelStart(c)) this.fail(`"${t.slice(s, Math.min(e, s + 30))}" is not a label name`);
        const known = this.lastKeys[n];
        // the usual `key="`: its name ends at the "=" (a native search), and one equal to the last set's n-th name is good
        if (known !== undefined && t.charCodeAt(s + known.length) === EQ && t.slice(s, s + known.length) === known) {
          key = known;
          i = s + known.length;
        } else {
          i++;
          while (i < e && isLabelChar(t.charCodeAt(i))) i++;
          key = t.slice(s, i);
          this.lastKeys[n] = key;
        }
        if (!this.om) while (i < e && (t.charCodeAt(i) === SP || t.charCodeAt(i) === TAB)) i++;
        if (t.charCodeAt(i) !== EQ) this.fail(`label ${key}: no "=" after its name`);
      }
      i++;
      if (!this.om) while (i < e && (t.charCodeAt(i) === SP || t.charCodeAt(i) === TAB)) i++;
      if (t.charCodeAt(i) !== QUOTE) this.fail(`label ${key}: its value is not quoted`);
      const v = this.quoted(i, e, key, true);
      const j = this.next;
      for (let d = 0; d < n; d++) if (this.setKeys[d] === key) this.fail(`label ${key} twice`);
      this.setKeys[n] = key;
      setLabel(labels, key, v);
      n++;
      first = false;
      i = j;
      if (!this.om) while (i < e && (t.charCodeAt(i) === SP || t.charCodeAt(i) === TAB)) i++;
      c = t.charCodeAt(i);
      if (c === COMMA) i++;
      // Prometheus text: the next pair may follow without its comma
      else if (c !== RBRACE && (this.om || (c !== QUOTE && !isLabelStart(c))))
        this.fail(i >= e ? 'labels without their closing "}"' : `label ${key}: unexpected "${t[i]}" after its value`);
    }
  }

  /** The family a sample belongs to: by its name, else its name less a suffix its type owns, else its own untyped family. */
  private familyOf(name: string, labels: Labels): Family {
    if (name === this.lastOwner.name && this.lastOwner.f) {
      if (this.lastOwner.le && labels.le === undefined) this.fail(`${name}: a histogram bucket without an "le" label`);
      return this.lastOwner.f;
    }
    let f = this.owner.get(name);
    if (f) {
      this.lastOwner = { name, f, le: f.type === 'histogram' && name.endsWith('_bucket') };
      if (this.lastOwner.le && labels.le === undefined) this.fail(`${name}: a histogram bucket without an "le" label`);
      return f;
    }
    f = this.families.get(name);
    // a histogram's or counter's bare name is no sample of it (a summary's and a gauge's is)
    if (f && (f.type === 'histogram' || f.type === 'gaugehistogram' || (this.om && f.type === 'counter'))) f = undefined;
    if (!f) {
      for (const suf of ALL_SUFFIXES) {
        if (!name.endsWith(suf)) continue;
        const base = this.families.get(name.slice(0, -suf.length));
        if (base && SUFFIXES[base.type]?.includes(suf)) {
          f = base;
          break;
        }
      }
    }
    if (!f) {
      f = this.families.get(name);
      if (f) this.fail(`${name}: a sample of the ${f.type} ${name} without the suffix its type needs`);
      f = this.declare(name, this.om ? 'unknown' : 'untyped');
    }
    if (f.type === 'histogram' && name.endsWith('_bucket') && labels.le === undefined)
      this.fail(`${name}: a histogram bucket without an "le" label`);
    if (f.type === 'summary' && name === f.name && labels.quantile === undefined)
      this.fail(`${name}: a summary quantile without a "quantile" label`);
    this.owner.set(name, f);
    return f;
  }
}

/** HELP text escapes: \\ and \n (and \" in OpenMetrics). */
function unescapeText(s: string, om: boolean): string {
  if (s.indexOf('\\') < 0) return s;
  return s.replace(/\\(.)/g, (m, c: string) => (c === '\\' ? '\\' : c === 'n' ? '\n' : om && c === '"' ? '"' : m));
}

/** Parses a whole page; throws ExpositionError naming the first bad line. */
export function parseExposition(text: string, o: ParseOptions = {}): Family[] {
  return parsePage(text, o).families;
}

/** parseExposition, saying how many samples were kept and how many were past maxSamples. */
export function parsePage(text: string, o: ParseOptions = {}): ParsedPage {
  const max = o.maxBytes ?? DEFAULT_MAX_BYTES;
  if (text.length > max) throw new ExpositionError(0, `the page is ${text.length} characters, over the ${max} limit`, o.source);
  const p = new Parser(text, o);
  const families = [...p.run().values()].filter((f) => f.samples.length > 0 || f.help !== undefined || f.type !== 'untyped');
  return { families, samples: p.kept, dropped: p.dropped };
}
