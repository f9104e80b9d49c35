/**
 * What an auth method's binding rules give a login's mapped claims: the one evaluation both `POST /v1/acl/login`
 * (through `loginWithClaims`) and the dry run `POST /v1/acl/binding-rules/evaluate` use, so the tester's answer is
 * the login's. Each rule in the store's order: its selector (go-bexpr, as Nomad's binder: an empty selector matches,
 * a selector that does not parse or evaluate is no match), then management, or its bind name interpolated with the
 * claims (an error there fails the login, as in Nomad), a role bound only when a role of that name exists.
 */
import {
  BexprEvaluationError,
  BexprSyntaxError,
  bexprReady,
  type Expression,
  evaluateBexpr,
  parseBexpr,
  type Selector,
  selectorMatches,
} from '../../../lib/bexpr.ts';
import { DomainError } from '../../../lib/errors.ts';
import type { AclAuthMethod } from '../auth-methods/model.ts';
import { bindNames, type ClaimVariables } from '../interpolate.ts';
import type { AclRoles } from '../roles/store.ts';
import type { AclBindingRules } from './store.ts';

/** One top-level term of a selector (`a and b and c` has three) and whether it holds for the claims. */
export interface TermVerdict {
  Text: string;
  Matched: boolean;
  /** Why the term could not be evaluated (go-bexpr's error; Nomad counts it as no match). */
  Error?: string;
}

export interface RuleVerdict {
  ID: string;
  Description: string;
  Selector: string;
  Matched: boolean;
  /** `and` or `or`: how the terms combine (absent for a selector of one term). */
  Combine?: 'and' | 'or';
  Terms: TermVerdict[];
  /** Why the selector does not parse (a stored selector the grammar now refuses). */
  Error?: string;
  BindType: 'role' | 'policy' | 'management';
  /** The bind name as the login computes it (the template when the rule did not match or did not compute). */
  BindName: string;
  /** A matched role rule whose role does not exist: the login binds nothing for it. */
  RoleMissing?: boolean;
  /** Why the bind name does not compute: a login that matches this rule fails with this message. */
  BindNameError?: string;
}

export interface BindingOutcome {
  Rules: RuleVerdict[];
  Management: boolean;
  Roles: Array<{ ID: string; Name: string }>;
  Policies: string[];
  /** The first bind-name failure in rule order: the login answers it (400) instead of a token. */
  failure?: DomainError;
}

/** The top-level operands of a chain of one operator (`a and (b and c)` → a, b, c). */
function flatten(expression: Expression, type: 'and' | 'or'): Expression[] {
  return expression.type === type
    ? [...flatten(expression.left, type), ...flatten(expression.right, type)]
    : [expression];
}

const identifier = /^[a-zA-Z][a-zA-Z0-9_/]*$/;

function formatSelector(selector: Selector): string {
  if (selector.kind === 'pointer')
    return JSON.stringify(
      `/${selector.path.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`,
    );
  return selector.path
    .map((part, index) =>
      index === 0 ? part : /^[0-9]+$/.test(part) || identifier.test(part) ? `.${part}` : `[${JSON.stringify(part)}]`,
    )
    .join('');
}

const operatorText: Record<string, string> = {
  equal: '==',
  'not equal': '!=',
  matches: 'matches',
  'not matches': 'not matches',
};

/** A term as selector text (go-bexpr's grammar: it parses back to the same term). */
export function formatExpression(expression: Expression): string {
  const inner = (child: Expression, parent: string) =>
    child.type === 'or' || child.type === 'collection' || (child.type === 'and' && parent !== 'and')
      ? `(${formatExpression(child)})`
      : formatExpression(child);
  switch (expression.type) {
    case 'or':
      return `${formatExpression(expression.left)} or ${formatExpression(expression.right)}`;
    case 'and':
      return `${inner(expression.left, 'and')} and ${inner(expression.right, 'and')}`;
    case 'not':
      return `not ${inner(expression.expr, 'not')}`;
    case 'collection': {
      const { name, index, value } = expression.binding;
      const binding = name ?? `${index ?? '_'}, ${value ?? '_'}`;
      return `${expression.op} ${formatSelector(expression.selector)} as ${binding} { ${formatExpression(expression.expr)} }`;
    }
    case 'match': {
      const selector = formatSelector(expression.selector);
      const value = JSON.stringify(expression.value ?? '');
      if (expression.operator === 'is empty' || expression.operator === 'is not empty')
        return `${selector} ${expression.operator}`;
      if (expression.operator === 'in' || expression.operator === 'not in')
        return `${value} ${expression.operator} ${selector}`;
      return `${selector} ${operatorText[expression.operator]} ${value}`;
    }
  }
}

function termVerdict(term: Expression, datum: Record<string, unknown>): TermVerdict {
  const Text = formatExpression(term);
  try {
    return { Text, Matched: evaluateBexpr(term, datum) };
  } catch (error) {
    if (error instanceof BexprEvaluationError)
      return { Text, Matched: false, Error: error.message || 'the term cannot be evaluated' };
    throw error;
  }
}

/** The selector's verdict: whether it matches (as the login decides it) and, with `explain`, each top-level term's. */
function selectorVerdict(
  selector: string,
  datum: Record<string, unknown>,
  explain: boolean,
): Pick<RuleVerdict, 'Matched' | 'Combine' | 'Terms' | 'Error'> {
  const Matched = selectorMatches(selector, datum);
  if (!explain || selector === '') return { Matched, Terms: [] };
  let expression: Expression;
  try {
    expression = parseBexpr(selector);
  } catch (error) {
    if (error instanceof BexprSyntaxError)
      return { Matched, Terms: [], Error: `selector is invalid: ${error.message}` };
    throw error;
  }
  const combine = expression.type === 'and' || expression.type === 'or' ? expression.type : undefined;
  const terms = combine ? flatten(expression, combine) : [expression];
  return { Matched, ...(combine ? { Combine: combine } : {}), Terms: terms.map((term) => termVerdict(term, datum)) };
}

/** The stores a binding reads (the scheduler has them): the rules, and the roles a rule names. */
export interface BindingStores {
  bindingRules: Pick<AclBindingRules, 'list'>;
  roles: Pick<AclRoles, 'getByName'>;
}

/**
 * Evaluates every binding rule of `method` against the mapped claims. `explain` adds each selector's terms (the
 * dry run); the login leaves them out. Nothing is written.
 */
export async function bindClaims(
  stores: BindingStores,
  method: AclAuthMethod,
  variables: ClaimVariables,
  explain = false,
): Promise<BindingOutcome> {
  const datum = { value: variables.value, list: variables.list };
  const mapped = Object.values(method.Config.ClaimMappings ?? {});
  const out: BindingOutcome = { Rules: [], Management: false, Roles: [], Policies: [] };
  const policies = new Set<string>();
  const roles = new Map<string, string>();
  for (const rule of (await stores.bindingRules.list()).filter((candidate) => candidate.AuthMethod === method.Name)) {
    if (rule.Selector) await bexprReady(rule.Selector);
    const verdict: RuleVerdict = {
      ID: rule.ID,
      Description: rule.Description,
      Selector: rule.Selector,
      ...selectorVerdict(rule.Selector, datum, explain),
      BindType: rule.BindType,
      BindName: rule.BindName,
    };
    out.Rules.push(verdict);
    if (!verdict.Matched) continue;
    if (rule.BindType === 'management') {
      out.Management = true;
      continue;
    }
    let names: string[];
    try {
      names = bindNames(rule.BindType, rule.BindName, variables, mapped);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      verdict.BindNameError = error.message;
      out.failure ??= error;
      continue;
    }
    for (const name of names) {
      verdict.BindName = name;
      if (rule.BindType === 'policy') policies.add(name);
      else {
        const role = await stores.roles.getByName(name);
        if (role) roles.set(role.ID, role.Name);
        else verdict.RoleMissing = true;
      }
    }
  }
  out.Policies = [...policies];
  out.Roles = [...roles].map(([ID, Name]) => ({ ID, Name }));
  return out;
}
