import type { Condition } from './intent.ts';

/** Whether a condition holds whatever the item (no field given, or only `all`/`any` of such): it needs no check. */
export function alwaysHolds(condition: Condition): boolean {
  return Object.entries(condition).every(([field, value]) => {
    if (value === undefined) return true;
    if (field === 'all') return (value as Condition[]).every(alwaysHolds);
    if (field === 'any') return (value as Condition[]).some(alwaysHolds);
    return false;
  });
}

/** The top-level attribute names a condition reads (the item's existence reads `pk`). */
export function attributesOf(condition: Condition): Set<string> {
  const names = new Set<string>();
  const top = (path: string) => names.add(path.split('.')[0] as string);
  if (condition.exists || condition.absent) names.add('pk');
  for (const field of ['equals', 'below', 'atMost', 'above', 'atLeast', 'beginsWith'] as const)
    for (const path of Object.keys(condition[field] ?? {})) top(path);
  for (const path of [...(condition.missing ?? []), ...(condition.present ?? [])]) top(path);
  for (const member of [...(condition.all ?? []), ...(condition.any ?? []), ...(condition.not ? [condition.not] : [])])
    for (const name of attributesOf(member)) names.add(name);
  return names;
}
