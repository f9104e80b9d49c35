/**
 * `${name}` interpolation of binding rule BindNames and token name formats over a login's claims:
 * `${value.x}` is a mapped claim, `${list.x}` a mapped list claim (one result per element).
 */
export interface ClaimVariables {
  value: Record<string, string>;
  list: Record<string, string[]>;
}

const reference = /\$\{([^}]*)\}/g;

/** The variable names a template uses; a `${` without its `}` is an error. */
export function templateNames(template: string): string[] {
  const names = [...template.matchAll(reference)].map((match) => (match[1] ?? '').trim());
  if (template.replace(reference, '').includes('${')) throw new Error('unterminated "${"');
  return names;
}

/**
 * Every string the template yields: one, or one per element of each list it uses; none when a variable is
 * missing (the rule does not bind).
 */
export function interpolate(template: string, variables: ClaimVariables, extra: Record<string, string> = {}): string[] {
  let results = [''];
  let last = 0;
  for (const match of template.matchAll(reference)) {
    const literal = template.slice(last, match.index);
    last = (match.index ?? 0) + match[0].length;
    const name = (match[1] ?? '').trim();
    let choices: string[] | undefined;
    if (name in extra) choices = [extra[name] as string];
    else if (name.startsWith('value.')) {
      const value = variables.value[name.slice('value.'.length)];
      choices = value === undefined ? undefined : [value];
    } else if (name.startsWith('list.')) choices = variables.list[name.slice('list.'.length)];
    if (!choices || choices.length === 0) return [];
    results = results.flatMap((prefix) => choices.map((choice) => prefix + literal + choice));
  }
  const tail = template.slice(last);
  return [...new Set(results.map((result) => result + tail))];
}
