import { Attribute, Change, ResultCodeError } from 'ldapts';
import type { Directory } from './client.ts';
import { directoryError, messageOf } from './client.ts';

/**
 * LDIF (RFC 2849) as the dynamic roles' templates produce it: records of `add` (the default), `delete`,
 * `modify` (add/delete/replace groups ended by `-`) and `modrdn`/`moddn`, with folded lines, comments,
 * `version: 1`, and base64 values (`attr:: …`, kept as bytes, e.g. AD's `unicodePwd`). No library on the
 * registry parses LDIF change records into operations for ldapts, so this is hand-written.
 */

type Value = string | Buffer;

export type LdifEntry =
  | { changetype: 'add'; dn: string; attributes: Array<{ type: string; values: Value[] }> }
  | { changetype: 'delete'; dn: string }
  | {
      changetype: 'modify';
      dn: string;
      changes: Array<{ operation: 'add' | 'delete' | 'replace'; type: string; values: Value[] }>;
    }
  | { changetype: 'modrdn'; dn: string; newrdn: string; deleteoldrdn: boolean; newsuperior?: string };

export class LdifError extends Error {}

interface Line {
  type: string;
  value: Value;
  number: number;
}

export function parseLdif(text: string): LdifEntry[] {
  const physical = text.replace(/\r\n?/g, '\n').split('\n');
  // Unfold: a line starting with one space continues the previous one.
  const logical: Array<{ text: string; number: number }> = [];
  for (const [index, line] of physical.entries()) {
    if (line.startsWith(' ') && logical.length > 0 && (logical[logical.length - 1] as { text: string }).text !== '') {
      (logical[logical.length - 1] as { text: string }).text += line.slice(1);
    } else {
      logical.push({ text: line, number: index + 1 });
    }
  }
  const records: Line[][] = [];
  let current: Line[] = [];
  for (const { text: line, number } of logical) {
    if (line.trim() === '') {
      if (current.length > 0) records.push(current);
      current = [];
      continue;
    }
    if (line.startsWith('#')) continue;
    if (line === '-') {
      current.push({ type: '-', value: '', number });
      continue;
    }
    const match = /^([A-Za-z0-9][A-Za-z0-9;.-]*)\s*:(:|<)?\s?(.*)$/.exec(line);
    if (!match) throw new LdifError(`line ${number}: expected "attribute: value", got "${line.slice(0, 40)}"`);
    const [, type, marker, raw] = match as unknown as [string, string, string | undefined, string];
    if (marker === '<') throw new LdifError(`line ${number}: URL values ("${type}:<") are not supported`);
    let value: Value = raw.replace(/^\s+/, '');
    if (marker === ':') {
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value.trim()))
        throw new LdifError(`line ${number}: invalid base64 value for "${type}"`);
      value = Buffer.from(value.trim(), 'base64');
    }
    current.push({ type, value, number });
  }
  if (current.length > 0) records.push(current);
  const head = records[0];
  if (head?.[0]?.type.toLowerCase() === 'version') {
    head.shift();
    if (head.length === 0) records.shift();
  }
  return records.map(parseRecord);
}

const text = (value: Value) => (Buffer.isBuffer(value) ? value.toString('utf8') : value);

function parseRecord(lines: Line[]): LdifEntry {
  const [first, ...rest] = lines as [Line, ...Line[]];
  if (first.type.toLowerCase() !== 'dn')
    throw new LdifError(`line ${first.number}: a record must start with "dn:", got "${first.type}"`);
  const dn = text(first.value).trim();
  if (dn === '') throw new LdifError(`line ${first.number}: empty dn`);
  let body = rest.filter((line) => line.type.toLowerCase() !== 'control');
  let changetype = 'add';
  if (body[0]?.type.toLowerCase() === 'changetype') {
    changetype = text(body[0].value).trim().toLowerCase();
    body = body.slice(1);
  }
  switch (changetype) {
    case 'add': {
      if (body.length === 0) throw new LdifError(`entry "${dn}": an add needs attributes`);
      const attributes: Array<{ type: string; values: Value[] }> = [];
      for (const line of body) {
        if (line.type === '-') throw new LdifError(`line ${line.number}: "-" outside a modify`);
        const existing = attributes.find((attribute) => attribute.type.toLowerCase() === line.type.toLowerCase());
        if (existing) existing.values.push(line.value);
        else attributes.push({ type: line.type, values: [line.value] });
      }
      return { changetype: 'add', dn, attributes };
    }
    case 'delete':
      if (body.length > 0) throw new LdifError(`line ${body[0]?.number}: a delete takes no attributes`);
      return { changetype: 'delete', dn };
    case 'modify': {
      const changes: Array<{ operation: 'add' | 'delete' | 'replace'; type: string; values: Value[] }> = [];
      let index = 0;
      while (index < body.length) {
        const head = body[index++] as Line;
        const operation = head.type.toLowerCase();
        if (operation !== 'add' && operation !== 'delete' && operation !== 'replace') {
          throw new LdifError(
            `line ${head.number}: expected add:, delete: or replace: in a modify, got "${head.type}"`,
          );
        }
        const type = text(head.value).trim();
        const values: Value[] = [];
        while (index < body.length && (body[index] as Line).type !== '-') {
          const line = body[index++] as Line;
          if (line.type.toLowerCase() !== type.toLowerCase())
            throw new LdifError(`line ${line.number}: expected "${type}:" in this ${operation}, got "${line.type}"`);
          values.push(line.value);
        }
        if (index >= body.length) throw new LdifError(`entry "${dn}": a modify group must end with "-"`);
        index++;
        if (operation === 'add' && values.length === 0)
          throw new LdifError(`entry "${dn}": "add: ${type}" needs values`);
        changes.push({ operation, type, values });
      }
      if (changes.length === 0) throw new LdifError(`entry "${dn}": a modify needs changes`);
      return { changetype: 'modify', dn, changes };
    }
    case 'modrdn':
    case 'moddn': {
      const field = (name: string) => body.find((line) => line.type.toLowerCase() === name);
      const newrdn = field('newrdn');
      if (!newrdn) throw new LdifError(`entry "${dn}": a modrdn needs "newrdn"`);
      const deleteoldrdn = field('deleteoldrdn');
      const newsuperior = field('newsuperior');
      return {
        changetype: 'modrdn',
        dn,
        newrdn: text(newrdn.value).trim(),
        deleteoldrdn: deleteoldrdn ? text(deleteoldrdn.value).trim() === '1' : true,
        ...(newsuperior ? { newsuperior: text(newsuperior.value).trim() } : {}),
      };
    }
    default:
      throw new LdifError(`entry "${dn}": unknown changetype "${changetype}"`);
  }
}

/** Attribute values for ldapts: all strings, or all bytes when any value is binary. */
function values(list: Value[]): string[] | Buffer[] {
  return list.some(Buffer.isBuffer)
    ? list.map((value) => (Buffer.isBuffer(value) ? value : Buffer.from(value, 'utf8')))
    : (list as string[]);
}

export async function applyEntry(directory: Directory, entry: LdifEntry): Promise<void> {
  switch (entry.changetype) {
    case 'add':
      return directory.add(
        entry.dn,
        entry.attributes.map((attribute) => new Attribute({ type: attribute.type, values: values(attribute.values) })),
      );
    case 'delete':
      return directory.del(entry.dn);
    case 'modify':
      return directory.modify(
        entry.dn,
        entry.changes.map(
          (change) =>
            new Change({
              operation: change.operation,
              modification: new Attribute({ type: change.type, values: values(change.values) }),
            }),
        ),
      );
    case 'modrdn':
      return directory.modifyDN(entry.dn, entry.newsuperior ? `${entry.newrdn},${entry.newsuperior}` : entry.newrdn);
  }
}

export interface LdifFailure {
  message: string;
  /** The LDAP result code when the server answered with an error. */
  code?: number;
}

/** Runs entries in order. Stops at the first error unless `continueOnError`; returns the errors, each naming its entry. */
export async function runLdif(
  directory: Directory,
  entries: LdifEntry[],
  options: { continueOnError: boolean },
): Promise<LdifFailure[]> {
  const failures: LdifFailure[] = [];
  for (const entry of entries) {
    try {
      await applyEntry(directory, entry);
    } catch (error) {
      const described = directoryError(error, `applying ${entry.changetype} of "${entry.dn}"`);
      failures.push({
        message: messageOf(described),
        ...(error instanceof ResultCodeError ? { code: error.code } : {}),
      });
      if (!options.continueOnError) break;
    }
  }
  return failures;
}

/**
 * Why `value` cannot be rendered into an LDIF template as it is, or undefined. RFC 2849's SAFE-STRING has no NUL, LF
 * or CR and does not start with a space, ":" or "<"; a value that breaks this would end its line and start another
 * attribute or entry, or be read back as base64 or a URL (issue 23 §8). Every other control character (C0, DEL, NEL,
 * the Unicode line and paragraph separators) is refused too: none belongs in a name.
 */
export function unsafeLdifValue(value: string, { checkStart = true } = {}): string | undefined {
  const control = [...value].find((char) => isControl(char.codePointAt(0) as number));
  if (control)
    return `holds the control character U+${(control.codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')}`;
  if (checkStart && /^[ :<]/.test(value))
    return `starts with ${JSON.stringify(value[0])}, which LDIF would not read back as the same value`;
  return undefined;
}

const isControl = (code: number) =>
  code <= 0x1f || code === 0x7f || code === 0x85 || code === 0x2028 || code === 0x2029;

/** The DNs an LDIF touches, in order and without repeats (the `distinguished_names` of dynamic creds). */
export const distinguishedNames = (entries: LdifEntry[]) => [...new Set(entries.map((entry) => entry.dn))];
