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
