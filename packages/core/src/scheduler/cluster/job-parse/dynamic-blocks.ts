/**
 * `dynamic` blocks, expanded as Nomad's `jobspec2` expands the job body with hcl's `dynblock`: for each element of
 * `for_each` (a list, or a map/object), one block of the dynamic block's type, its `labels` and `content` evaluated
 * with the iterator (`iterator = name`, else the block type's name) bound to `{ key, value }`. Nested `dynamic`
 * blocks expand inside the content, seeing the outer iterator.
 *
 * The parser answers a block's body as JSON with each expression as its `${…}` source; a generated block's
 * expressions are evaluated here, while their iterator is bound, and answered as literals (their `${` and `%{`
 * escaped as `$${` and `%%{`, so that the decoder's own evaluation gives back the same text).
 */
import { evaluate, type HclValue, hclError, type Scope } from './expressions.ts';
import { checkList, isObject, sortedKeys } from './hcl-values.ts';

type Body = Record<string, unknown>;

/** The most blocks the `dynamic` blocks of one job file may generate, nested ones included. */
export const maxDynamicBlocks = 1000;

interface Count {
  blocks: number;
}

const isBody = (value: unknown): value is Body => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A value evaluated, every string escaped so that evaluating it again gives it back. */
function literal(value: HclValue): HclValue {
  if (typeof value === 'string') return value.replace(/([$%])\{/g, '$1$1{');
  if (Array.isArray(value)) return value.map(literal);
  if (isObject(value)) {
    const out: { [key: string]: HclValue } = {};
    for (const key of Object.keys(value)) out[key.replace(/([$%])\{/g, '$1$1{')] = literal(value[key] as HclValue);
    return out;
  }
  return value;
}

function iteratorName(raw: unknown, blockType: string, where: string): string {
  if (raw === undefined) return blockType;
  const name = typeof raw === 'string' ? /^\$\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}$/.exec(raw)?.[1] : undefined;
  if (!name) throw hclError(where, 'Invalid dynamic iterator name', 'Dynamic iterator must be a single variable name.');
  return name;
}

function elements(collection: HclValue, where: string): Array<[HclValue, HclValue]> {
  if (Array.isArray(collection)) return checkList(collection).map((value, key) => [key, value]);
  if (isObject(collection)) return sortedKeys(collection).map((key) => [key, collection[key] as HclValue]);
  throw hclError(
    where,
    'Invalid dynamic for_each value',
    `Cannot use a ${collection === null ? 'null' : typeof collection} value in for_each. An iterable collection is required.`,
  );
}

/** One generated block's body: nested dynamic blocks expanded, then every expression evaluated. */
function generated(content: Body, scope: Scope, where: string, count: Count): Body {
  const expanded = expandDynamicBlocks(content, scope, where, count);
  const out: Body = {};
  for (const [key, value] of Object.entries(expanded))
    out[key] = literal(evaluate(value, scope, `${where} › ${key}`) as HclValue);
  return out;
}

function expandOne(spec: Body, blockType: string, scope: Scope, where: string, into: Body, count: Count): void {
  for (const key of Object.keys(spec))
    if (!['for_each', 'iterator', 'labels', 'content'].includes(key))
      throw hclError(where, 'Unsupported argument', `An argument named "${key}" is not expected in a dynamic block.`);
  if (spec.for_each === undefined)
    throw hclError(where, 'Missing required argument', 'The argument "for_each" is required in a dynamic block.');
  const contents = spec.content;
  if (!Array.isArray(contents) || contents.length !== 1 || !isBody(contents[0]))
    throw hclError(where, 'Missing content block', 'A dynamic block must have exactly one nested "content" block.');
  const iterator = iteratorName(spec.iterator, blockType, where);
  for (const [key, value] of elements(evaluate(spec.for_each, scope, `${where} › for_each`), where)) {
    if (++count.blocks > maxDynamicBlocks)
      throw hclError(
        where,
        'Too many dynamic blocks',
        `The dynamic blocks generate more than ${maxDynamicBlocks} blocks.`,
      );
    const bound = new Map(scope.bound ?? []);
    bound.set(iterator, { key, value });
    const inner: Scope = { ...scope, bound };
    const labels =
      spec.labels === undefined
        ? []
        : (() => {
            const given = evaluate(spec.labels, inner, `${where} › labels`);
            if (!Array.isArray(given) || !given.every((label) => typeof label === 'string'))
              throw hclError(where, 'Invalid dynamic block labels', 'labels must be a list of strings.');
            return given as string[];
          })();
    const body = generated(contents[0] as Body, inner, where, count);
    if (labels.length === 0) {
      const list = (Array.isArray(into[blockType]) ? into[blockType] : []) as Body[];
      into[blockType] = [...list, body];
      continue;
    }
    let level: Body = isBody(into[blockType]) ? (into[blockType] as Body) : {};
    into[blockType] = level;
    labels.forEach((label, position) => {
      const last = position === labels.length - 1;
      const existing = level[label];
      if (last) level[label] = [...(Array.isArray(existing) ? existing : []), body];
      else {
        const next = isBody(existing) ? existing : {};
        level[label] = next;
        level = next;
      }
    });
  }
}

/** The body with its `dynamic` blocks (and those of every block inside it) replaced by the blocks they generate. */
export function expandDynamicBlocks(body: Body, scope: Scope, where: string, count: Count = { blocks: 0 }): Body {
  const out: Body = {};
  for (const [key, value] of Object.entries(body)) {
    if (key === 'dynamic') continue;
    out[key] =
      Array.isArray(value) && value.every(isBody)
        ? value.map((item) => expandDynamicBlocks(item as Body, scope, `${where} › ${key}`, count))
        : isBody(value) && !key.includes('${')
          ? expandLabelled(value, scope, `${where} › ${key}`, count)
          : value;
  }
  if (body.dynamic === undefined) return out;
  if (!isBody(body.dynamic))
    throw hclError(where, 'Missing name for dynamic', 'All dynamic blocks must have 1 labels (name).');
  for (const [blockType, specs] of Object.entries(body.dynamic)) {
    if (!Array.isArray(specs) || !specs.every(isBody))
      throw hclError(where, 'Missing name for dynamic', 'All dynamic blocks must have 1 labels (name).');
    for (const spec of specs)
      expandOne(spec as Body, blockType, scope, `${where} › dynamic "${blockType}"`, out, count);
  }
  return out;
}

/** Labelled blocks (`{ label: [body] }`) expanded inside; an attribute's map value comes back as it was. */
function expandLabelled(value: Body, scope: Scope, where: string, count: Count): unknown {
  const entries = Object.entries(value);
  if (entries.length === 0 || !entries.every(([, item]) => Array.isArray(item) && item.every(isBody))) return value;
  const out: Body = {};
  for (const [label, bodies] of entries)
    out[label] = (bodies as Body[]).map((item) => expandDynamicBlocks(item, scope, `${where} "${label}"`, count));
  return out;
}
