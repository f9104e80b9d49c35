/**
 * Distinguished names as RFC 4514 writes them: `attr=value` pairs joined by `+` into RDNs, RDNs joined by `,`.
 * Attribute types are names (`cn`, `ou`) or OIDs (`2.5.4.3`); values are strings with `\`-escapes (`\,` or
 * `\2C`) or `#` and hex (BER). Spaces around `,`, `+` and `=` are tolerated, as OpenLDAP and go-ldap do.
 * ldapts builds DNs but has no parser, hence this checker; it only says what is wrong, it does not rewrite.
 */

const attributeType = /^(?:[A-Za-z][A-Za-z0-9-]*|\d+(?:\.\d+)+)$/;
const hexValue = /^#(?:[0-9A-Fa-f]{2})+$/;
/** Characters that must be escaped anywhere in a string value. */
const mustEscape = new Set(['"', '+', ',', ';', '<', '>', '\\', '\0']);
const escapable = new Set(['"', '+', ',', ';', '<', '>', '\\', ' ', '#', '=']);
const hexDigit = /[0-9A-Fa-f]/;

/** Why `dn` is not a distinguished name, or undefined when it is one. An empty string is the empty DN. */
export function dnProblem(dn: string): string | undefined {
  if (dn.trim() === '') return undefined;
  let index = 0;
  const length = dn.length;
  const skipSpaces = () => {
    while (index < length && dn[index] === ' ') index++;
  };
  for (;;) {
    skipSpaces();
    const equals = dn.indexOf('=', index);
    if (equals < 0)
      return `"${dn.slice(index)}" has no "=": expected attribute=value pairs such as cn=admin,dc=example,dc=org`;
    const type = dn.slice(index, equals).trim();
    if (!attributeType.test(type)) return `"${type}" is not an attribute type (a name such as cn, or an OID)`;
    index = equals + 1;
    skipSpaces();
    const start = index;
    let lastUnescapedSpace = -1;
    while (index < length && dn[index] !== ',' && dn[index] !== '+') {
      const char = dn[index] as string;
      if (char === '\\') {
        const next = dn[index + 1];
        if (next !== undefined && escapable.has(next)) index += 2;
        else if (next !== undefined && hexDigit.test(next) && hexDigit.test(dn[index + 2] ?? '')) index += 3;
        else
          return `a "\\" at position ${index + 1} escapes nothing valid (use \\, \\+ \\" \\\\ \\< \\> \\; \\= \\# or two hex digits)`;
        continue;
      }
      if (mustEscape.has(char))
        return `${char === '\0' ? 'NUL' : `"${char}"`} at position ${index + 1} must be escaped`;
      if (char === ' ') lastUnescapedSpace = index;
      index++;
    }
    let value = dn.slice(start, index);
    // Trailing unescaped spaces belong to the separator, not the value.
    if (lastUnescapedSpace === index - 1) value = value.replace(/ +$/, '');
    if (value.startsWith('#') && !hexValue.test(value))
      return `the value "${value}" starts with "#" but is not hex-encoded BER (escape it as \\#)`;
    if (index >= length) return undefined;
    index++;
    if (dn.slice(index).trim() === '') return `"${dn}" ends with "${dn[index - 1]}" and no attribute=value after it`;
  }
}

/** A 400-ready message when the field is not a DN. */
export function checkDn(field: string, dn: string): string | undefined {
  const problem = dnProblem(dn);
  return problem && `invalid "${field}": not a distinguished name (RFC 4514): ${problem}`;
}
