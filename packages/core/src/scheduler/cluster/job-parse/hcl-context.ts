/** What evaluating an HCL2 expression carries (`hcl-evaluate.ts`), and the shape of a function (`hcl-functions.ts`). */
import type { HclExpression } from './hcl-syntax.ts';
import type { Budget, HclValue, Scope } from './hcl-values.ts';

export interface Context {
  scope: Scope;
  /** Names bound by `for` expressions, template `%{for}` and `dynamic` iterators, innermost last. */
  bound: Map<string, HclValue>;
  budget: Budget;
  /** `evaluateExpression`, for the functions that evaluate their own arguments (`try`, `can`). */
  evaluate: (expression: HclExpression, context: Context) => HclValue;
}

/** A function: its argument count (`min`..`max`, `max` absent for variadic) and its implementation. */
export interface HclFunction {
  min: number;
  max?: number;
  run: (args: HclValue[], context: Context) => HclValue;
}
