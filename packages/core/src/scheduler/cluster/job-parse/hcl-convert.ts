/**
 * `convert(value, type)`: hcl's `typeexpr.ConvertFunc`, whose second argument is a type expression (`string`,
 * `number`, `bool`, `any`, `list(T)`, `set(T)`, `map(T)`, `tuple([T, …])`, `object({name = T, …})`), converted as
 * cty converts: primitives to each other where the text allows, collections element by element.
 */
import type { HclExpression } from './hcl-syntax.ts';
import {
  equal,
  HclEvalError,
  type HclValue,
  isObject,
  newObject,
  sortedKeys,
  toBool,
  toList,
  toMap,
  toNumber,
  toText,
  typeName,
} from './hcl-values.ts';

type HclType =
  | { kind: 'string' | 'number' | 'bool' | 'any' }
  | { kind: 'list' | 'set' | 'map'; element: HclType }
  | { kind: 'tuple'; elements: HclType[] }
  | { kind: 'object'; attributes: Record<string, HclType> };

const invalid = (detail: string): never => {
  throw new HclEvalError('Invalid type specification', detail);
};

export function typeOf(expression: HclExpression): HclType {
  if (expression.kind === 'variable') {
    if (['string', 'number', 'bool', 'any'].includes(expression.name))
      return { kind: expression.name as 'string' | 'number' | 'bool' | 'any' };
    return invalid(`The keyword "${expression.name}" is not a valid type specification.`);
  }
  if (expression.kind !== 'call') return invalid('A type specification is a keyword or a type constructor call.');
  const [argument] = expression.args;
  if (expression.args.length !== 1 || !argument)
    return invalid(`The ${expression.name} type constructor requires one argument.`);
  switch (expression.name) {
    case 'list':
    case 'set':
    case 'map':
      return { kind: expression.name, element: typeOf(argument) };
    case 'tuple':
      if (argument.kind !== 'tuple') return invalid('The tuple type constructor requires a list of element types.');
      return { kind: 'tuple', elements: argument.items.map(typeOf) };
    case 'object': {
      if (argument.kind !== 'object')
        return invalid('The object type constructor requires an object of attribute types.');
      const attributes: Record<string, HclType> = {};
      for (const item of argument.items) {
        if (item.key.kind !== 'literal' || typeof item.key.value !== 'string')
          return invalid('Object type attribute names must be identifiers.');
        attributes[item.key.value] = typeOf(item.value);
      }
      return { kind: 'object', attributes };
    }
    default:
      return invalid(`Keyword "${expression.name}" is not a valid type constructor.`);
  }
}

export function convert(value: HclValue, type: HclType): HclValue {
  if (value === null || type.kind === 'any') return value;
  switch (type.kind) {
    case 'string':
      if (typeof value === 'object') throw new HclEvalError('Invalid value', `string required, not ${typeName(value)}`);
      return toText(value, 'the value');
    case 'number':
      return toNumber(value, 'the value');
    case 'bool':
      return toBool(value, 'the value');
    case 'list':
    case 'set': {
      const items = (
        isObject(value) ? sortedKeys(value).map((key) => value[key] as HclValue) : toList(value, 'the value')
      ).map((item) => convert(item, type.element));
      if (type.kind === 'list') return items;
      const unique: HclValue[] = [];
      for (const item of items) if (!unique.some((seen) => equal(seen, item))) unique.push(item);
      if (unique.every((item) => typeof item === 'string'))
        return (unique as string[]).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      if (unique.every((item) => typeof item === 'number')) return (unique as number[]).sort((a, b) => a - b);
      return unique;
    }
    case 'map': {
      const map = toMap(value, 'the value');
      const out = newObject();
      for (const key of Object.keys(map)) out[key] = convert(map[key] as HclValue, type.element);
      return out;
    }
    case 'tuple': {
      const items = toList(value, 'the value');
      if (items.length !== type.elements.length)
        throw new HclEvalError(
          'Invalid value',
          `tuple required with ${type.elements.length} elements, not ${items.length}`,
        );
      return items.map((item, position) => convert(item, type.elements[position] as HclType));
    }
    case 'object': {
      const map = toMap(value, 'the value');
      const out = newObject();
      for (const [name, attribute] of Object.entries(type.attributes)) {
        if (!Object.hasOwn(map, name)) throw new HclEvalError('Invalid value', `attribute "${name}" is required`);
        out[name] = convert(map[name] as HclValue, attribute);
      }
      return out;
    }
  }
}
