/**
 * The bundles test/deploy/bundle-contents.test.ts checks: one per name of `names` (the family list's families, or the
 * engines the stacks give a job), each with its expectation from `declared`, or undefined where none is declared so
 * that the test fails for it instead of leaving it out. A declared name that is not in `names` is checked too.
 */
export function checkedBundles<Expected>(
  names: readonly string[],
  declared: Record<string, Expected>,
): Array<[string, Expected | undefined]> {
  return [...new Set([...names, ...Object.keys(declared)])].map((name) => [name, declared[name]]);
}
