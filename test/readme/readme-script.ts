/**
 * The shell examples of the README and the docs as data: their ```sh blocks, each cut into the commands bash will
 * run, with the answer the doc shows under a command (`# {…}` comment lines, `(HTTP 403)` for a status), so a test
 * can run the text as written and hold every answer to what the doc says.
 */

export interface ShBlock {
  /** The doc it is in, from the repository root (`README.md`, `docs/secrets-api.md`). */
  file: string;
  /** 1-based line of the opening fence, for messages. */
  line: number;
  text: string;
  commands: ShCommand[];
}

export interface ShCommand {
  /** The doc it is in, as its block's `file`. */
  file: string;
  /** 1-based line of the doc where the command starts. */
  line: number;
  /** As written, continuation lines included. */
  text: string;
  /** The `# …` lines right under the command that show its answer (a JSON shape, or a status). */
  shown?: { json?: string; status?: number };
}

export function shBlocks(markdown: string, file = 'README.md'): ShBlock[] {
  const lines = markdown.split('\n');
  const blocks: ShBlock[] = [];
  for (let index = 0; index < lines.length; index++) {
    if (lines[index]?.trim() !== '```sh') continue;
    const start = index;
    const body: string[] = [];
    for (index++; index < lines.length && lines[index]?.trim() !== '```'; index++) body.push(lines[index] as string);
    blocks.push({ file, line: start + 1, text: body.join('\n'), commands: commandsOf(body, file, start + 2) });
  }
  return blocks;
}

/** Commands (continuation lines joined) and the answer comments directly under each. */
function commandsOf(lines: string[], file: string, firstLine: number): ShCommand[] {
  const commands: ShCommand[] = [];
  let previous: ShCommand | undefined;
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] as string;
    const trimmed = line.trim();
    if (trimmed === '') {
      previous = undefined;
      continue;
    }
    if (trimmed.startsWith('#')) {
      const comment = trimmed.replace(/^#\s*/, '');
      const answer = /^(?<json>[{[].*?)?\s*(?:\(HTTP (?<status>\d{3})\))?$/.exec(comment);
      if (previous && answer && (answer.groups?.json || answer.groups?.status)) {
        previous.shown = {
          ...(answer.groups?.json ? { json: answer.groups.json } : {}),
          ...(answer.groups?.status ? { status: Number(answer.groups.status) } : {}),
        };
      } else {
        previous = undefined;
      }
      continue;
    }
    const start = index;
    const parts = [line];
    while (/\\$/.test(lines[index] as string) && index + 1 < lines.length) parts.push(lines[++index] as string);
    previous = { file, line: firstLine + start, text: parts.join('\n') };
    commands.push(previous);
  }
  return commands;
}

/**
 * Whether an answer has the shape the README shows. The shown text is JSON where `…` (or `...`) as the last
 * member of an object or array means "and more", and `…` inside a string stands for any text. Objects are
 * matched on the members shown; arrays and other values exactly.
 */
export function matchesShown(actual: unknown, shown: string): string | undefined {
  const json = shown.replace(/,\s*(?:…|\.\.\.)\s*([}\]])/g, '$1');
  let expected: unknown;
  try {
    expected = JSON.parse(json);
  } catch (error) {
    return `the README's answer is not JSON with … placeholders: ${shown} (${(error as Error).message})`;
  }
  return mismatch(actual, expected, '');
}

function mismatch(actual: unknown, expected: unknown, at: string): string | undefined {
  const where = at === '' ? 'the answer' : at;
  if (typeof expected === 'string' && expected.includes('…')) {
    const pattern = new RegExp(`^${expected.split('…').map(escapeRegex).join('[\\s\\S]*')}$`);
    return typeof actual === 'string' && pattern.test(actual)
      ? undefined
      : `${where} is ${JSON.stringify(actual)}, the README shows ${JSON.stringify(expected)}`;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length)
      return `${where} is ${JSON.stringify(actual)}, the README shows ${JSON.stringify(expected)}`;
    for (const [index, item] of expected.entries()) {
      const problem = mismatch(actual[index], item, `${at}[${index}]`);
      if (problem) return problem;
    }
    return undefined;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual))
      return `${where} is ${JSON.stringify(actual)}, the README shows an object`;
    for (const [key, value] of Object.entries(expected)) {
      if (!(key in actual))
        return `${at === '' ? '' : `${at}.`}${key} is missing, the README shows ${JSON.stringify(value)}`;
      const problem = mismatch((actual as Record<string, unknown>)[key], value, at === '' ? key : `${at}.${key}`);
      if (problem) return problem;
    }
    return undefined;
  }
  return Object.is(actual, expected)
    ? undefined
    : `${where} is ${JSON.stringify(actual)}, the README shows ${JSON.stringify(expected)}`;
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
