import { describe, expect, it } from 'vitest';
import { distinguishedNames, LdifError, parseLdif } from './ldif.ts';

describe('parseLdif', () => {
  it('parses add (default), modify, delete and modrdn records with folding, comments and base64', () => {
    const text = [
      'version: 1',
      '',
      '# a new user',
      'dn: cn=app,ou=dynamic,dc=example,dc=org',
      'objectClass: inetOrgPerson',
      'objectClass: top',
      'cn: app',
      'description: a long line that is',
      '  folded',
      `unicodePwd:: ${Buffer.from('"pw"', 'utf16le').toString('base64')}`,
      '',
      'dn: cn=devs,ou=groups,dc=example,dc=org',
      'changetype: modify',
      'add: member',
      'member: cn=app,ou=dynamic,dc=example,dc=org',
      '-',
      'replace: description',
      'description: changed',
      '-',
      'delete: seeAlso',
      '-',
      '',
      'dn: cn=old,dc=example,dc=org',
      'changetype: delete',
      '',
      'dn: cn=a,dc=example,dc=org',
      'changetype: modrdn',
      'newrdn: cn=b',
      'deleteoldrdn: 1',
      'newsuperior: ou=x,dc=example,dc=org',
    ].join('\r\n');
    const entries = parseLdif(text);
    expect(entries).toHaveLength(4);
    expect(entries[0]).toEqual({
      changetype: 'add',
      dn: 'cn=app,ou=dynamic,dc=example,dc=org',
      attributes: [
        { type: 'objectClass', values: ['inetOrgPerson', 'top'] },
        { type: 'cn', values: ['app'] },
        { type: 'description', values: ['a long line that is folded'] },
        { type: 'unicodePwd', values: [Buffer.from('"pw"', 'utf16le')] },
      ],
    });
    expect(entries[1]).toEqual({
      changetype: 'modify',
      dn: 'cn=devs,ou=groups,dc=example,dc=org',
      changes: [
        { operation: 'add', type: 'member', values: ['cn=app,ou=dynamic,dc=example,dc=org'] },
        { operation: 'replace', type: 'description', values: ['changed'] },
        { operation: 'delete', type: 'seeAlso', values: [] },
      ],
    });
    expect(entries[2]).toEqual({ changetype: 'delete', dn: 'cn=old,dc=example,dc=org' });
    expect(entries[3]).toEqual({
      changetype: 'modrdn',
      dn: 'cn=a,dc=example,dc=org',
      newrdn: 'cn=b',
      deleteoldrdn: true,
      newsuperior: 'ou=x,dc=example,dc=org',
    });
    expect(distinguishedNames(entries)).toHaveLength(4);
    expect(parseLdif('dn:: Y249eCxkYz1vcmc=\nchangetype: delete')).toEqual([
      { changetype: 'delete', dn: 'cn=x,dc=org' },
    ]);
  });

  it('rejects malformed LDIF with the line', () => {
    const bad: Array<[string, string]> = [
      ['cn: x', 'must start with "dn:"'],
      ['dn: cn=x\nchangetype: modify\nadd: member\nmember: a', 'must end with "-"'],
      ['dn: cn=x\nchangetype: modify\nadd: member\ncn: a\n-', 'expected "member:"'],
      ['dn: cn=x\nchangetype: delete\ncn: x', 'takes no attributes'],
      ['dn: cn=x\nchangetype: rename', 'unknown changetype'],
      ['dn: cn=x\njpegPhoto:< file:///etc/passwd', 'not supported'],
      ['dn: cn=x\nnot a line', 'line 2'],
      ['dn: cn=x', 'needs attributes'],
      ['dn: cn=x\nchangetype: modrdn', 'newrdn'],
    ];
    for (const [text] of bad) expect(() => parseLdif(text), text).toThrow(LdifError);
    for (const [text, message] of bad) expect(() => parseLdif(text)).toThrow(message);
  });
});
