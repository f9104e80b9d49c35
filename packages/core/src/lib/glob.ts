/**
 * The one `*` glob of both services: go-glob's (`github.com/ryanuber/go-glob` v1.0.0), which Vault uses for token
 * roles' policy globs and JWT `bound_claims`, and Nomad for namespace and other rule globs. `*` matches any run of
 * characters, newlines included, and nothing else is special.
 *
 * go-glob splits the pattern on `*` and finds each part with `strings.Index` after the last one, so its cost is linear
 * in the subject. Compiling the pattern to a JavaScript `RegExp` (`^.*-.*-.*-prod$`) is not the same thing: V8
 * backtracks, cubic in the subject for three stars and exponential beyond, on input an attacker chooses (a policy name,
 * a claim, a namespace). Here each part is found with Knuth–Morris–Pratt from where the previous one ended, so the
 * subject is read once and each part's table built once: at most 2·(subject + pattern) steps, which `steps` counts
 * for the property test (`test/attacks/linear-matching.test.ts`). The glob libraries on npm (minimatch, picomatch,
 * micromatch, matcher) compile to a `RegExp` and give `*` path or shell meanings go-glob does not have.
 *
 * Go compares UTF-8 bytes; here UTF-16 code units, which agree on well-formed text. A lone surrogate (JSON allows
 * `"\ud800"`) is read as U+FFFD first, as Go's JSON decoder reads it.
 */

/** Counts the steps of one or more matches (comparisons and table steps), for tests that bound the work. */
export interface GlobSteps {
  count: number;
}

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const wellFormed = (text: string): string => text.replace(loneSurrogate, '\ufffd');

/** One part between stars, with its Knuth–Morris–Pratt failure table. */
interface Part {
  text: string;
  failure: Int32Array;
}

function failureTable(text: string, steps: GlobSteps): Int32Array {
  const failure = new Int32Array(text.length);
  let matched = 0;
  for (let i = 1; i < text.length; i++) {
    while (matched > 0 && text.charCodeAt(i) !== text.charCodeAt(matched)) {
      matched = failure[matched - 1] as number;
      steps.count++;
    }
    steps.count++;
    if (text.charCodeAt(i) === text.charCodeAt(matched)) matched++;
    failure[i] = matched;
  }
  return failure;
}

/** The index just past the first occurrence of `part` in `subject` at or after `from`, or -1. */
function endOfFirst(part: Part, subject: string, from: number, steps: GlobSteps): number {
  const { text, failure } = part;
  if (text.length === 0) return from;
  let matched = 0;
  for (let i = from; i < subject.length; i++) {
    const code = subject.charCodeAt(i);
    while (matched > 0 && code !== text.charCodeAt(matched)) {
      matched = failure[matched - 1] as number;
      steps.count++;
    }
    steps.count++;
    if (code === text.charCodeAt(matched)) matched++;
    if (matched === text.length) return i + 1;
  }
  return -1;
}

/** A pattern split and prepared once, to match many subjects. */
export class Glob {
  readonly pattern: string;
  readonly #literal: boolean;
  readonly #parts: Part[];

  constructor(pattern: string, steps: GlobSteps = { count: 0 }) {
    this.pattern = wellFormed(pattern);
    const texts = this.pattern.split('*');
    this.#literal = texts.length === 1;
    // The first part is matched at the start and the last at the end: only the parts between need a table.
    this.#parts = this.#literal
      ? []
      : texts.map((text, i) => ({
          text,
          failure: i === 0 || i === texts.length - 1 ? new Int32Array(0) : failureTable(text, steps),
        }));
  }

  matches(raw: string, steps: GlobSteps = { count: 0 }): boolean {
    const subject = wellFormed(raw);
    if (this.#literal) return subject === this.pattern;
    const parts = this.#parts;
    const first = parts[0] as Part;
    const last = parts[parts.length - 1] as Part;
    // The first part is anchored (go-glob: `strings.Index` must answer 0); an empty one is a leading `*`.
    steps.count += first.text.length;
    if (!subject.startsWith(first.text)) return false;
    let at = first.text.length;
    for (let i = 1; i < parts.length - 1; i++) {
      at = endOfFirst(parts[i] as Part, subject, at, steps);
      if (at < 0) return false;
    }
    // The last part must end the rest; an empty one is a trailing `*`.
    steps.count += last.text.length;
    return subject.length - at >= last.text.length && subject.endsWith(last.text);
  }
}

/** go-glob's `Glob(pattern, subject)`. Where one pattern meets many subjects, make a `Glob` once instead. */
export function globMatches(pattern: string, subject: string, steps?: GlobSteps): boolean {
  return new Glob(pattern, steps).matches(subject, steps);
}
