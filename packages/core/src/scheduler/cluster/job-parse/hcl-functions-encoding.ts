/** The encoding, hashing and UUID functions of Nomad's job-file table (go-cty stdlib, go-cty-funcs). */
import { createHash, randomUUID } from 'node:crypto';
import type { HclFunction } from './hcl-context.ts';
import { checkList, checkString, HclEvalError, newObject, toText, type HclValue } from './hcl-values.ts';

const text = (value: HclValue | undefined, what = 'the string') => toText(value as HclValue, what);

const hash = (algorithm: string): HclFunction => ({
  min: 1,
  max: 1,
  run: ([value]) => createHash(algorithm).update(text(value)).digest('hex'),
});

function fromJson(value: unknown): HclValue {
  if (Array.isArray(value)) return value.map(fromJson);
  if (value !== null && typeof value === 'object') {
    const out = newObject();
    for (const [key, item] of Object.entries(value)) out[key] = fromJson(item);
    return out;
  }
  return value as HclValue;
}

/** RFC 4180 records, as Go's encoding/csv reads them. */
function csvRecords(input: string): string[][] {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let quoted = false;
  let position = 0;
  while (position < input.length) {
    const char = input[position] as string;
    if (quoted) {
      if (char === '"' && input[position + 1] === '"') {
        field += '"';
        position += 2;
        continue;
      }
      if (char === '"') quoted = false;
      else field += char;
      position++;
      continue;
    }
    if (char === '"' && field === '') quoted = true;
    else if (char === ',') {
      record.push(field);
      field = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && input[position + 1] === '\n') position++;
      record.push(field);
      records.push(record);
      record = [];
      field = '';
    } else if (char === '"') throw new HclEvalError('Invalid CSV', `bare " in non-quoted field at offset ${position}`);
    else field += char;
    position++;
  }
  if (quoted) throw new HclEvalError('Invalid CSV', 'extraneous or missing " in quoted field');
  if (field !== '' || record.length > 0) {
    record.push(field);
    records.push(record);
  }
  return records;
}

const namespaces: Record<string, string> = {
  dns: '6ba7b810-9dad-11d1-80b4-00c04fd430c8',
  url: '6ba7b811-9dad-11d1-80b4-00c04fd430c8',
  oid: '6ba7b812-9dad-11d1-80b4-00c04fd430c8',
  x500: '6ba7b814-9dad-11d1-80b4-00c04fd430c8',
};

function uuidv5(namespace: string, name: string): string {
  const id = namespaces[namespace] ?? namespace;
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id))
    throw new HclEvalError('Invalid namespace', `uuidv5() doesn't support namespace ${JSON.stringify(namespace)}`);
  const bytes = createHash('sha1')
    .update(Buffer.concat([Buffer.from(id.replace(/-/g, ''), 'hex'), Buffer.from(name)]))
    .digest()
    .subarray(0, 16);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const encodingFunctions: Record<string, HclFunction> = {
  base64encode: { min: 1, max: 1, run: ([value]) => checkString(Buffer.from(text(value)).toString('base64')) },
  base64decode: {
    min: 1,
    max: 1,
    run: ([value]) => {
      const encoded = text(value);
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || encoded.length % 4 !== 0)
        throw new HclEvalError('Invalid argument', 'failed to decode base64 data');
      const decoded = Buffer.from(encoded, 'base64');
      const out = decoded.toString('utf8');
      if (!Buffer.from(out).equals(decoded))
        throw new HclEvalError('Invalid argument', 'the result of decoding the provided string is not valid UTF-8');
      return out;
    },
  },
  jsonencode: { min: 1, max: 1, run: ([value]) => checkString(JSON.stringify(value) ?? 'null') },
  jsondecode: {
    min: 1,
    max: 1,
    run: ([value]) => {
      try {
        return fromJson(JSON.parse(text(value)));
      } catch (error) {
        throw new HclEvalError('Invalid JSON', (error as Error).message);
      }
    },
  },
  csvdecode: {
    min: 1,
    max: 1,
    run: ([value]) => {
      const [header, ...rows] = csvRecords(text(value));
      if (!header) throw new HclEvalError('Invalid CSV', 'missing header line');
      return checkList(
        rows.map((row, line) => {
          if (row.length !== header.length)
            throw new HclEvalError('Invalid CSV', `record on line ${line + 2}: wrong number of fields`);
          const out = newObject();
          header.forEach((name, column) => {
            out[name] = row[column] as string;
          });
          return out;
        }),
      );
    },
  },
  urlencode: {
    min: 1,
    max: 1,
    run: ([value]) =>
      checkString(
        encodeURIComponent(text(value))
          .replace(/%20/g, '+')
          .replace(/[!'()*~]/g, (char) => (char === '~' ? char : `%${char.charCodeAt(0).toString(16).toUpperCase()}`)),
      ),
  },
  md5: hash('md5'),
  sha1: hash('sha1'),
  sha256: hash('sha256'),
  sha512: hash('sha512'),
  uuidv4: { min: 0, max: 0, run: () => randomUUID() },
  uuidv5: {
    min: 2,
    max: 2,
    run: ([namespace, name]) => uuidv5(text(namespace, 'the namespace'), text(name, 'the name')),
  },
};
