/**
 * The syntax tree of an HCL2 expression and template (hashicorp/hcl `hclsyntax`'s grammar), built by
 * `hcl-expression.ts` and evaluated by `hcl-evaluate.ts`. `source` keeps a traversal's text: a reference to a
 * variable the job file does not declare (`attr.kernel.name`, `NOMAD_PORT_http`) evaluates, as in Nomad's
 * `jobspec2`, to that text inside `${…}`, for the client to interpolate at run time.
 */
import type { HclValue } from './hcl-values.ts';

export type Part =
  | { kind: 'text'; text: string }
  | { kind: 'interpolation'; expression: HclExpression }
  | { kind: 'if'; condition: HclExpression; whenTrue: Part[]; whenFalse: Part[] }
  | { kind: 'for'; keyName?: string; valueName: string; collection: HclExpression; body: Part[] };

export type HclExpression =
  | { kind: 'literal'; value: HclValue }
  | { kind: 'template'; parts: Part[] }
  | { kind: 'variable'; name: string; source: string }
  | { kind: 'attribute'; target: HclExpression; name: string; source: string }
  | { kind: 'index'; target: HclExpression; key: HclExpression; source: string; literalKey: boolean }
  | { kind: 'splat'; target: HclExpression; each: HclExpression }
  /** The element a splat's `each` applies to. */
  | { kind: 'splatItem' }
  | { kind: 'call'; name: string; args: HclExpression[]; expandLast: boolean }
  | { kind: 'tuple'; items: HclExpression[] }
  | { kind: 'object'; items: Array<{ key: HclExpression; value: HclExpression }> }
  | { kind: 'parenthesis'; inner: HclExpression }
  | { kind: 'conditional'; condition: HclExpression; whenTrue: HclExpression; whenFalse: HclExpression }
  | { kind: 'binary'; operator: BinaryOperator; left: HclExpression; right: HclExpression }
  | { kind: 'unary'; operator: '-' | '!'; operand: HclExpression }
  | {
      kind: 'for';
      keyName?: string;
      valueName: string;
      collection: HclExpression;
      keyResult?: HclExpression;
      valueResult: HclExpression;
      condition?: HclExpression;
      group: boolean;
    };

export type BinaryOperator = '||' | '&&' | '==' | '!=' | '<' | '<=' | '>' | '>=' | '+' | '-' | '*' | '/' | '%';
