/**
 * A block of a job file, as the HCL parser answers it (attributes as values, a block as an array of bodies, a
 * labelled block as an object of label → bodies), decoded into Nomad's `api` struct it stands for (`api-schema.ts`),
 * as `gohcl` decodes it for `jobspec2`: an argument or block the struct does not have is an error, a singular block
 * given twice is an error, a required argument missing is an error, values are converted as HCL converts them, and
 * every field the file does not set is written as Go's JSON encoder writes it unset. The blocks `jobspec2` decodes by
 * hand (`hcl_conversions.go`) are here too: `constraint` and `affinity` (their `distinct_hosts = true`, `regexp = …`
 * shorthands), a task's `scaling "cpu"`/`"mem"` policies, and `env`/`meta` as a block or a map.
 */
import { DurationError, parseGoDuration } from '../../../lib/duration.ts';
import { apiStructs, type FieldKind, type FieldSpec } from './api-schema.ts';
import { type BlockNode, childrenOf } from './block-order.ts';
import { evaluate, type HclValue, hclError, type Scope } from './expressions.ts';

export type DecodedStruct = Record<string, unknown>;
type Body = Record<string, unknown>;

const isObject = (value: unknown): value is Body =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isBlockList = (value: unknown): value is Body[] => Array.isArray(value) && value.every(isObject);

/** Where in the file a problem is, for its message: `job "web" › group "cache" › task "redis"`. */
export const within = (where: string, part: string) => (where ? `${where} › ${part}` : part);

const typeName = (value: HclValue) =>
  value === null ? 'null' : Array.isArray(value) ? 'list' : typeof value === 'object' ? 'object' : typeof value;

function unsuitable(where: string, name: string, wanted: string, value: HclValue): never {
  throw hclError(
    within(where, name),
    'Unsuitable value type',
    `Unsuitable value: ${wanted} required, got ${typeName(value)}${typeof value === 'string' ? ` "${value}"` : ''}.`,
  );
}

function toStringValue(value: HclValue, where: string, name: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return unsuitable(where, name, 'string', value);
}

function toInteger(value: HclValue, where: string, name: string): number {
  const number =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))
        ? Number(value)
        : unsuitable(where, name, 'number', value);
  if (!Number.isInteger(number))
    throw hclError(within(where, name), 'Unsuitable value type', `Unsuitable value: a whole number is required.`);
  return number;
}

function toBool(value: HclValue, where: string, name: string): boolean {
  if (typeof value === 'boolean') return value;
  if (value === 'true' || value === 'false') return value === 'true';
  return unsuitable(where, name, 'bool', value);
}

function toDuration(value: HclValue, where: string, name: string): number {
  if (typeof value === 'number') return toInteger(value, where, name);
  if (typeof value !== 'string') return unsuitable(where, name, 'string', value);
  try {
    return Math.round(parseGoDuration(value) * 1e9);
  } catch (error) {
    if (error instanceof DurationError)
      throw hclError(within(where, name), 'Unsuitable value type', `Unsuitable duration value: ${error.message}.`);
    throw error;
  }
}

function toList<T>(value: HclValue, where: string, name: string, item: (value: HclValue) => T): T[] {
  if (!Array.isArray(value)) return unsuitable(where, name, 'list', value);
  return value.map(item);
}

/** A map attribute or a block of attributes (`env { A = "1" }`, `env = { A = "1" }`). */
function mapOf(raw: unknown, where: string, name: string, scope: Scope, wanted = 'map'): Record<string, HclValue> {
  let body: unknown = raw;
  if (Array.isArray(raw)) {
    if (!isBlockList(raw)) return unsuitable(where, name, wanted, evaluate(raw, scope, within(where, name)));
    if (raw.length !== 1) throw hclError(where, `Duplicate ${name} block`, `Only one ${name} block is allowed here.`);
    body = raw[0];
  }
  const value = evaluate(body, scope, within(where, name));
  if (!isObject(value)) return unsuitable(where, name, wanted, value);
  return value as Record<string, HclValue>;
}

function attribute(kind: FieldKind, raw: unknown, where: string, name: string, scope: Scope): unknown {
  if (kind === 'stringMap')
    return Object.fromEntries(
      Object.entries(mapOf(raw, where, name, scope, 'map of string')).map(([key, item]) => [
        key,
        toStringValue(item, where, name),
      ]),
    );
  if (kind === 'anyMap') return mapOf(raw, where, name, scope);
  if (kind === 'stringListsMap')
    return Object.fromEntries(
      Object.entries(mapOf(raw, where, name, scope)).map(([key, item]) => [
        key,
        toList(item, where, name, (entry) => toStringValue(entry, where, name)),
      ]),
    );
  if (isBlockList(raw) && raw.length > 0)
    throw hclError(where, 'Unsupported block type', `Blocks of type "${name}" are not expected here.`);
  const value = evaluate(raw, scope, within(where, name));
  if (value === null) return null;
  switch (kind) {
    case 'string':
      return toStringValue(value, where, name);
    case 'number':
      return toInteger(value, where, name);
    case 'bool':
      return toBool(value, where, name);
    case 'duration':
      return toDuration(value, where, name);
    case 'strings':
      return toList(value, where, name, (item) => toStringValue(item, where, name));
    case 'numbers':
      return toList(value, where, name, (item) => toInteger(item, where, name));
    default:
      throw hclError(where, 'Unsupported argument', `An argument named "${name}" is not expected here.`);
  }
}

const labelField = (structName: string) => apiStructs[structName]?.find((field) => field.label);

/**
 * Each labelled block's label, body and place in the file, in the order written: `{ "web": [ {…} ], "db": [ {…} ] }`
 * (the parser's keys come sorted) → `[["web", {…}, node], ["db", {…}, node]]` as `parent` holds them.
 */
export function labelled(
  raw: unknown,
  where: string,
  blockType: string,
  parent: BlockNode | undefined,
): Array<[string, Body, BlockNode | undefined]> {
  if (!isObject(raw) || isBlockList(raw))
    throw hclError(where, `Missing name for ${blockType}`, `All ${blockType} blocks must have 1 labels (name).`);
  const byLabel = new Map<string, Body[]>();
  for (const [label, bodies] of Object.entries(raw)) {
    if (!isBlockList(bodies))
      throw hclError(where, `Missing name for ${blockType}`, `All ${blockType} blocks must have 1 labels (name).`);
    byLabel.set(label, [...bodies]);
  }
  const written = childrenOf(parent, blockType);
  const total = [...byLabel.values()].reduce((sum, bodies) => sum + bodies.length, 0);
  if (written.length === total && written.every((node) => byLabel.has(node.labels[0] ?? '\0')))
    return written.map((node) => {
      const label = node.labels[0] as string;
      return [label, (byLabel.get(label) as Body[]).shift() as Body, node];
    });
  return [...byLabel].flatMap(([label, bodies]) =>
    bodies.map((body): [string, Body, undefined] => [label, body, undefined]),
  );
}

function block(
  structName: string,
  raw: unknown,
  where: string,
  name: string,
  scope: Scope,
  parent: BlockNode | undefined,
): unknown {
  if (labelField(structName)) {
    const [[label, body, node] = ['', {}, undefined], ...more] = labelled(raw, where, name, parent);
    if (more.length > 0) throw hclError(where, `Duplicate ${name} block`, `Only one ${name} block is allowed here.`);
    return decodeBlock(structName, body, within(where, `${name} "${label}"`), scope, { label, node });
  }
  if (!isBlockList(raw))
    throw hclError(where, 'Unsupported argument', `An argument named "${name}" is not expected here: write a block.`);
  if (raw.length !== 1) throw hclError(where, `Duplicate ${name} block`, `Only one ${name} block is allowed here.`);
  return decodeBlock(structName, raw[0] as Body, within(where, name), scope, { node: childrenOf(parent, name)[0] });
}

function blocks(
  structName: string,
  raw: unknown,
  where: string,
  name: string,
  scope: Scope,
  parent: BlockNode | undefined,
): DecodedStruct[] {
  if (labelField(structName))
    return labelled(raw, where, name, parent).map(([label, body, node]) =>
      decodeBlock(structName, body, within(where, `${name} "${label}"`), scope, { label, node }),
    );
  if (!isBlockList(raw))
    throw hclError(where, 'Unsupported argument', `An argument named "${name}" is not expected here: write a block.`);
  const written = childrenOf(parent, name);
  return raw.map((body, index) => decodeBlock(structName, body, within(where, name), scope, { node: written[index] }));
}

/** Nomad's decoders by hand for these structs (`hcl_conversions.go`). */
const special: Record<string, (body: Body, where: string, scope: Scope) => DecodedStruct> = {
  Constraint: (body, where, scope) => placementRule(body, where, scope, 'constraint'),
  Affinity: (body, where, scope) => placementRule(body, where, scope, 'affinity'),
};

/** `constraint` and `affinity`: attribute/value/operator, or one of the operator shorthands. */
function placementRule(body: Body, where: string, scope: Scope, kind: 'constraint' | 'affinity'): DecodedStruct {
  const shorthands =
    kind === 'constraint'
      ? ['version', 'semver', 'regexp', 'set_contains', 'distinct_hosts', 'distinct_property']
      : ['version', 'semver', 'regexp', 'set_contains_any', 'set_contains_all', 'set_contains'];
  const accepted =
    kind === 'constraint'
      ? [
          'attribute',
          'value',
          'operator',
          ...shorthands,
          'set_contains_all',
          'set_contains_any',
          'is_set',
          'is_not_set',
        ]
      : ['attribute', 'value', 'operator', 'weight', ...shorthands];
  const values: Record<string, HclValue> = {};
  for (const [key, raw] of Object.entries(body)) {
    if (!accepted.includes(key))
      throw hclError(where, 'Unsupported argument', `An argument named "${key}" is not expected here.`);
    const value = attribute(
      key === 'distinct_hosts' ? 'bool' : key === 'weight' ? 'number' : 'string',
      raw,
      where,
      key,
      scope,
    );
    if (value !== null) values[key] = value as HclValue;
  }
  const text = (key: string) => (typeof values[key] === 'string' ? (values[key] as string) : '');
  const rule: DecodedStruct = { LTarget: text('attribute'), RTarget: text('value'), Operand: text('operator') };
  if (kind === 'affinity') rule.Weight = values.weight ?? null;
  for (const shorthand of shorthands) {
    if (shorthand === 'distinct_hosts') {
      if (values.distinct_hosts !== undefined) {
        rule.Operand = 'distinct_hosts';
        rule.RTarget = String(values.distinct_hosts);
      }
    } else if (shorthand === 'distinct_property') {
      if (text(shorthand) !== '') {
        rule.Operand = 'distinct_property';
        rule.LTarget = text(shorthand);
      }
    } else if (text(shorthand) !== '') {
      rule.Operand = shorthand;
      rule.RTarget = text(shorthand);
    }
  }
  if (rule.Operand === '') rule.Operand = '=';
  return rule;
}

/** A task's `scaling "cpu"` and `scaling "mem"` blocks: vertical policies (`decodeTaskScalingPolicies`). */
function taskScaling(raw: unknown, where: string, scope: Scope, parent: BlockNode | undefined): DecodedStruct[] {
  const seen = new Set<string>();
  return labelled(raw, where, 'scaling', parent).map(([label, body, node]) => {
    const name = label.toLowerCase();
    const type = name === 'cpu' ? 'vertical_cpu' : name === 'mem' ? 'vertical_mem' : '';
    const at = within(where, `scaling "${label}"`);
    if (!type) throw hclError(at, 'Invalid scaling policy name', 'scaling policy name must be "cpu" or "mem"');
    if (seen.has(name))
      throw hclError(at, `Duplicate scaling "${name}" block`, `Only one scaling ${name} block is allowed.`);
    seen.add(name);
    const policy = decodeBlock('ScalingPolicy', body, at, scope, { node });
    if (policy.Type === '') policy.Type = type;
    else if (policy.Type !== type)
      throw hclError(
        at,
        'Invalid scaling policy type',
        `Invalid policy type, expected "${policy.Type}" but found "${type}"`,
      );
    return policy;
  });
}

/**
 * A block's body decoded into the api struct `structName`. `extra` names the further blocks the caller decodes
 * itself (a group's `vault` and `secret`, the job's `task`), returned untouched under `extras`.
 */
export function decodeBlock(
  structName: string,
  body: Body,
  where: string,
  scope: Scope,
  place: {
    /** The block's label, for the struct's label field. */
    label?: string;
    /** The block in the file (`block-order.ts`), for the order of its labelled blocks. */
    node?: BlockNode | undefined;
    /** Blocks the caller decodes itself (the job's `vault`, `secret`, `task`): returned untouched in `found`. */
    extras?: { names: string[]; found: Record<string, unknown> };
  } = {},
): DecodedStruct {
  const { label, node, extras } = place;
  const handwritten = special[structName];
  if (handwritten) return handwritten(body, where, scope);
  const fields = apiStructs[structName];
  if (!fields) throw new Error(`no api struct ${structName}`);
  const byName = new Map<string, FieldSpec>();
  for (const field of fields) if (field.hcl) byName.set(field.hcl, field);
  const set = new Map<string, unknown>();
  const groupExtras: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(body)) {
    if (extras?.names.includes(name)) {
      extras.found[name] = raw;
      continue;
    }
    if (structName === 'TaskGroup' && (name === 'vault' || name === 'secret')) {
      groupExtras[name] = raw;
      continue;
    }
    if (structName === 'Task' && name === 'scaling') {
      set.set('ScalingPolicies', taskScaling(raw, where, scope, node));
      continue;
    }
    const field = byName.get(name);
    if (!field?.kind)
      throw isBlockList(raw) || (isObject(raw) && Object.values(raw).every(isBlockList) && Object.keys(raw).length > 0)
        ? hclError(where, 'Unsupported block type', `Blocks of type "${name}" are not expected here.`)
        : hclError(where, 'Unsupported argument', `An argument named "${name}" is not expected here.`);
    const [shape, inner = ''] = field.kind.split(':') as [string, string?];
    const value =
      shape === 'block'
        ? block(inner, raw, where, name, scope, node)
        : shape === 'blocks'
          ? blocks(inner, raw, where, name, scope, node)
          : shape === 'labeledMap'
            ? Object.fromEntries(
                labelled(raw, where, name, node).map(([key, item, child]) => [
                  key,
                  decodeBlock(inner, item, within(where, `${name} "${key}"`), scope, { label: key, node: child }),
                ]),
              )
            : attribute(field.kind, raw, where, name, scope);
    if (shape === 'labeledMap' && Object.keys(value as object).length !== labelled(raw, where, name, node).length)
      throw hclError(where, `Duplicate ${name} block`, `Two ${name} blocks have one label.`);
    set.set(field.json, value);
  }
  const out: DecodedStruct = {};
  for (const field of fields) {
    if (field.required && !set.has(field.json))
      throw hclError(
        where,
        'Missing required argument',
        `The argument "${field.hcl}" is required, but no definition was found.`,
      );
    if (field.label) out[field.json] = label ?? field.zero;
    else if (set.has(field.json)) out[field.json] = set.get(field.json) ?? field.zero;
    else if (!field.omitEmpty) out[field.json] = field.zero;
  }
  if (structName === 'TaskGroup') finishGroup(out, groupExtras, where, scope, node);
  return out;
}

/**
 * A group's own `vault` and `secret` blocks given to its tasks, and its `scaling` block's type, as Nomad's
 * `decodeTaskGroup` does (a task with secrets of its own gets them twice there: Nomad appends the task's secrets to
 * themselves, not the group's; done the same here, since the result must be what Nomad answers).
 */
function finishGroup(
  group: DecodedStruct,
  extras: Record<string, unknown>,
  where: string,
  scope: Scope,
  node: BlockNode | undefined,
): void {
  const tasks = (group.Tasks as DecodedStruct[] | null) ?? [];
  if (extras.vault !== undefined) {
    const vault = block('Vault', extras.vault, where, 'vault', scope, node);
    for (const task of tasks) if (task.Vault === null) task.Vault = structuredClone(vault);
  }
  if (extras.secret !== undefined) {
    const secrets = blocks('Secret', extras.secret, where, 'secret', scope, node);
    for (const task of tasks) {
      const own = (task.Secrets as DecodedStruct[] | null) ?? [];
      task.Secrets = own.length === 0 ? structuredClone(secrets) : [...own, ...own];
    }
  }
  const scaling = group.Scaling as DecodedStruct | null;
  if (scaling) {
    if (scaling.Type === '') scaling.Type = 'horizontal';
    if (scaling.Type !== 'horizontal')
      throw hclError(
        within(where, 'scaling'),
        'Invalid group scaling type',
        `task group scaling policy had invalid type: "${scaling.Type}"`,
      );
    if (scaling.Max === null)
      throw hclError(
        within(where, 'scaling'),
        'Missing required argument',
        'The argument "max" is required, but no definition was found.',
      );
  }
}
