/**
 * The duplicate rule of this service's HCL documents, stricter than hcl's forks: within one object, no attribute
 * (`key = …`, and every JSON member) may be given twice, however its key is written (`x`, `"x"`, `"\u0078"`), in
 * both syntaxes. hcl v1 merges such repeats (the `v1.0.1-vault-7` fork refuses only an attribute whose key is
 * written the same way twice), and a merge can make a document mean something other than what a reader sees
 * (`capabilities = ["deny"]` then `"capabilities" = ["read"]`), so a repeat is an error naming the key and where
 * it is given. Blocks (`rule "charset" { … }`) may repeat: whether a repeat is allowed is the caller's rule.
 */
import { keyName, type Node, type ObjectList, type Token } from './hcl-v1-ast.ts';
import { HclSyntaxError } from './hcl-v1-error.ts';

/** Throws HclSyntaxError at the first key given twice in one object of the tree. */
export function refuseDuplicateKeys(node: Node): void {
  switch (node.kind) {
    case 'items':
      checkList(node);
      for (const item of node.items) refuseDuplicateKeys(item.value);
      return;
    case 'object':
      refuseDuplicateKeys(node.list);
      return;
    case 'list':
      for (const element of node.elements) refuseDuplicateKeys(element);
      return;
    case 'literal':
      return;
  }
}

function checkList(list: ObjectList): void {
  const duplicate = duplicateKey(list);
  if (duplicate) throw duplicate;
}

/** The error for the first key given twice directly in this object list, if any. */
export function duplicateKey(list: ObjectList): HclSyntaxError | undefined {
  const seen = new Map<string, Token>();
  for (const item of list.items) {
    const first = item.keys[0];
    if (!first || !item.assign) continue;
    const names = item.keys.map(keyName);
    const id = JSON.stringify(names);
    const earlier = seen.get(id);
    if (earlier) {
      return new HclSyntaxError(
        `${describeKeys(names)} is given twice (first at ${earlier.line}:${earlier.column}); a key may be given only once in an object`,
        first.line,
        first.column,
      );
    }
    seen.set(id, first);
  }
  return undefined;
}

/** `key "x"`, or for a block `block path "a"`. */
export function describeKeys(names: string[]): string {
  if (names.length === 1) return `key ${JSON.stringify(names[0])}`;
  return `block ${names[0]} ${names
    .slice(1)
    .map((name) => JSON.stringify(name))
    .join(' ')}`;
}
