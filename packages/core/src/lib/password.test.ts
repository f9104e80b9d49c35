import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  generatePassword,
  PasswordPolicyError,
  parsePasswordPolicy,
  randomString,
  satisfiesPolicy,
} from './password.ts';

const hcl = `
length = 24
rule "charset" {
  charset = "abcdefghijklmnopqrstuvwxyz"
  min-chars = 1
}
rule "charset" {
  charset = "0123456789"
  min-chars = 3
}
rule "charset" {
  charset = "!@#$%^&*"
  min-chars = 2
}`;

function policyError(text: string): string {
  try {
    parsePasswordPolicy(text);
  } catch (error) {
    if (error instanceof PasswordPolicyError) return error.message;
    throw error;
  }
  throw new Error(`expected ${text} to be rejected`);
}

describe('password policies', () => {
  it('parses HCL and generates passwords meeting every rule', () => {
    const policy = parsePasswordPolicy(hcl);
    expect(policy.length).toBe(24);
    expect(policy.rules.map((rule) => rule.minChars)).toEqual([1, 3, 2]);
    for (let index = 0; index < 200; index++) {
      const password = generatePassword(policy);
      expect(password).toHaveLength(24);
      expect(satisfiesPolicy(password, policy)).toBe(true);
      expect(password.replace(/[^0-9]/g, '').length).toBeGreaterThanOrEqual(3);
    }
  });

  it('parses the JSON form', () => {
    const json = JSON.stringify({
      length: 10,
      rule: [{ charset: { charset: 'ab', 'min-chars': 1 } }, { charset: [{ charset: 'XY', 'min-chars': 2 }] }],
    });
    const policy = parsePasswordPolicy(json);
    expect(policy).toEqual({
      length: 10,
      rules: [
        { charset: 'ab', minChars: 1 },
        { charset: 'XY', minChars: 2 },
      ],
    });
    expect(generatePassword(policy)).toMatch(/^[abXY]{10}$/);
  });

  it('rejects impossible or malformed policies with a reason', () => {
    expect(policyError('length = 3\nrule "charset" { charset = "a" }')).toContain('between 4 and 100');
    expect(policyError('length = 101\nrule "charset" { charset = "a" }')).toContain('between 4 and 100');
    expect(policyError('rule "charset" { charset = "a" }')).toContain('"length" is required');
    expect(policyError('length = 8')).toContain('at least one rule');
    expect(
      policyError(
        'length = 4\nrule "charset" { charset = "ab" \n min-chars = 3 }\nrule "charset" { charset = "0" \n min-chars = 2 }',
      ),
    ).toContain('require at least 5 characters');
    expect(policyError('length = 8\nrule "wordlist" { words = ["a"] }')).toContain('unrecognized rule type');
    expect(policyError('length = 8\nrule "charset" { charset = "" }')).toContain('non-empty');
    expect(policyError('length = 8\nrule "charset" { charset = "a\\tb" }')).toContain('non-printable');
    expect(policyError('length = 8\nrule "charset" { charset = "ab"\n min-chars = -1 }')).toContain('min-chars');
    expect(policyError('length = "eight"\nrule "charset" { charset = "ab" }')).toContain('integer');
    expect(policyError('length = 8 rule "charset" {')).toContain('unable to parse');
  });

  it('always satisfies a satisfiable policy (property)', () => {
    const rule = fc.record({
      charset: fc.string({ unit: fc.constantFrom(...'abcdefXYZ0123!?'), minLength: 1, maxLength: 6 }),
      minChars: fc.nat(4),
    });
    fc.assert(
      fc.property(fc.array(rule, { minLength: 1, maxLength: 4 }), fc.integer({ min: 4, max: 40 }), (rules, length) => {
        const needed = rules.reduce((sum, entry) => sum + entry.minChars, 0);
        fc.pre(needed <= length);
        const text = `length = ${length}\n${rules.map((entry) => `rule "charset" {\n charset = ${JSON.stringify(entry.charset)}\n min-chars = ${entry.minChars}\n}`).join('\n')}`;
        const policy = parsePasswordPolicy(text);
        expect(satisfiesPolicy(generatePassword(policy), policy)).toBe(true);
      }),
    );
  });

  it('draws random strings from base62 by default', () => {
    expect(randomString(64)).toMatch(/^[A-Za-z0-9]{64}$/);
    expect(randomString(5, 'x')).toBe('xxxxx');
  });
});
