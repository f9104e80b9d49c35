import { describe, expect, it } from 'vitest';
import { adPasswordValue, defaultUserAttr, passwordChanges } from './schemas.ts';

const shape = (schema: Parameters<typeof passwordChanges>[0], password: string) =>
  passwordChanges(schema, password).map((change) => ({
    operation: change.operation,
    type: change.modification.type,
    values: change.modification.values.map((value) => (Buffer.isBuffer(value) ? value.toString('hex') : value)),
  }));

describe('password modify operations per schema', () => {
  it('openldap replaces userPassword with the clear text', () => {
    expect(shape('openldap', 's3cret')).toEqual([{ operation: 'replace', type: 'userPassword', values: ['s3cret'] }]);
  });

  it('ad replaces unicodePwd with the quoted password in UTF-16LE', () => {
    const expected = Buffer.from([0x22, 0, 0x70, 0, 0xe9, 0, 0x22, 0]).toString('hex'); // "pé"
    expect(shape('ad', 'pé')).toEqual([{ operation: 'replace', type: 'unicodePwd', values: [expected] }]);
    expect(adPasswordValue('ab').toString('utf16le')).toBe('"ab"');
  });

  it('racf sets a password up to 8 characters, a pass phrase beyond, and marks it non-expired', () => {
    expect(shape('racf', 'Abc12345')).toEqual([
      { operation: 'replace', type: 'racfPassword', values: ['Abc12345'] },
      { operation: 'replace', type: 'racfAttributes', values: ['noexpired'] },
    ]);
    expect(shape('racf', 'a longer pass phrase')).toEqual([
      { operation: 'replace', type: 'racfPassPhrase', values: ['a longer pass phrase'] },
      { operation: 'replace', type: 'racfAttributes', values: ['noexpired'] },
    ]);
  });

  it('searches users by the schema default attribute', () => {
    expect(defaultUserAttr).toEqual({ openldap: 'cn', ad: 'userPrincipalName', racf: 'racfid' });
  });
});
