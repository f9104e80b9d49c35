/** Attack helpers shared by test/attacks/path-*.test.ts. */

/** The spellings of `/v1/<path>` that are not the canonical one. */
export function spellings(path: string): string[] {
  const parts = path.split('/');
  const out = new Set<string>([`/v1/${path}/`, `/v1/${path}//`, `//v1/${path}`, `/v1//${path}`]);
  for (let index = 1; index < parts.length; index++) {
    const before = parts.slice(0, index).join('/');
    const after = parts.slice(index).join('/');
    out.add(`/v1/${before}//${after}`);
    out.add(`/v1/${before}/%2F${after}`);
    out.add(`/v1/${before}%2F${after}`);
    out.add(`/v1/${before}%2f${after}`);
    out.add(`/v1/${before}/./${after}`);
    out.add(`/v1/${before}/%2e/${after}`);
    out.add(`/v1/${before}/zz/../${after}`);
    out.add(`/v1/${before}/zz/%2e%2e/${after}`);
    out.add(`/v1/${before}%5C${after}`);
  }
  return [...out];
}

/**
 * More spellings of `/v1/<path>` for the property test (test/attacks/path-property.test.ts): a letter sent
 * percent-encoded (`%61dmin`: the same canonical path once decoded, so exactly as allowed or denied as the path
 * itself), upper-case escapes of `.` and `/` (`%2E`, `%2F`, `%5C`), a trailing `/.` and `/%2e`, and an encoded
 * letter combined with a trailing `/`.
 */
export function encodedSpellings(path: string): string[] {
  const parts = path.split('/');
  const out = new Set<string>([`/v1/${path}/.`, `/v1/${path}/%2e`, `/v1/${path}/%2E`]);
  for (let index = 0; index < parts.length; index++) {
    const part = parts[index] ?? '';
    const letter = part.search(/[A-Za-z0-9]/);
    if (letter !== -1) {
      const encoded = `%${part.charCodeAt(letter).toString(16).toUpperCase()}`;
      const spelt = [
        ...parts.slice(0, index),
        `${part.slice(0, letter)}${encoded}${part.slice(letter + 1)}`,
        ...parts.slice(index + 1),
      ].join('/');
      out.add(`/v1/${spelt}`);
      out.add(`/v1/${spelt}/`);
    }
    if (index === 0) continue;
    const before = parts.slice(0, index).join('/');
    const after = parts.slice(index).join('/');
    out.add(`/v1/${before}/%2E/${after}`);
    out.add(`/v1/${before}/zz/%2E%2E/${after}`);
    out.add(`/v1/${before}%2F${after}`);
    out.add(`/v1/${before}%5c${after}`);
    out.add(`/v1/${before}\\${after}`);
  }
  return [...out];
}

/** Whether a spelling from `encodedSpellings` names the canonical path itself once decoded (only letters encoded). */
export const onlyEncodesLetters = (url: string) =>
  /%(?:[46][1-9A-F]|[57][0-9A]|3[0-9])/.test(url) && !/%(?:2[eEfF]|5[cC])|\\|\/\/|\/\.|\/$/.test(url);
