/**
 * `bcrypt()` and `rsadecrypt()` in a job file (`job-parse/hcl-functions-crypto.ts`, `job-parse/hcl-rsa-decrypt.ts`)
 * against Go's own libraries (Debian's golang-golang-x-crypto-dev and Go's crypto/rsa, run by
 * test/differential/crypto/crypto-harness.go): every hash ours makes verifies with Go's CompareHashAndPassword at the
 * cost asked for, a wrong password does not, and every hash Go makes verifies with bcryptjs's compare (the salt is
 * random, so hashes are compared by verifying); every ciphertext Go's rsa.EncryptPKCS1v15 makes, ours decrypts. (The
 * other direction, node's ciphertexts decrypted by Go's rsa.DecryptPKCS1v15, is in the hcl2 differential.)
 */
import { generateKeyPairSync } from 'node:crypto';
import bcryptjs from 'bcryptjs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { HclValue } from '../../packages/core/src/scheduler/cluster/job-parse/expressions.ts';
import { evaluateExpression } from '../../packages/core/src/scheduler/cluster/job-parse/hcl-evaluate.ts';
import { parseExpression } from '../../packages/core/src/scheduler/cluster/job-parse/hcl-expression.ts';
import { Budget } from '../../packages/core/src/scheduler/cluster/job-parse/hcl-values.ts';
import { buildGoHarness, runGoHarness } from '../support/go-harness.ts';

interface Verdict {
  match: boolean;
  cost: number;
  hash?: string;
  ciphertext?: string;
  error?: string;
}

const passwords = ['hunter2', '', 'héllo ✓ 😀', 'a\u0000b', 'p'.repeat(72), ' spaced ', '$2a$10$looks-like-a-hash'];

function ours(expression: string, password: string, more: Record<string, string> = {}): string {
  const scope = {
    variables: new Map<string, HclValue>([['pw', password], ...Object.entries(more)]),
    locals: new Map(),
  };
  const value = evaluateExpression(parseExpression(expression), {
    scope,
    bound: new Map(),
    budget: new Budget(),
    evaluate: evaluateExpression,
  });
  if (typeof value !== 'string') throw new Error(`bcrypt answered ${JSON.stringify(value)}`);
  return value;
}

describe('bcrypt() and rsadecrypt(): ours against Go’s x/crypto/bcrypt and crypto/rsa', () => {
  let binary: string;
  const made = passwords.flatMap((password, index) => [
    { password, cost: 4, hash: ours('bcrypt(var.pw, 4)', password) },
    // The default cost (10) once, and cost 5 and a cost below 4 (taken as 10) on one password each.
    ...(index === 0 ? [{ password, cost: 10, hash: ours('bcrypt(var.pw)', password) }] : []),
    ...(index === 1 ? [{ password, cost: 5, hash: ours('bcrypt(var.pw, 5)', password) }] : []),
    ...(index === 2 ? [{ password, cost: 10, hash: ours('bcrypt(var.pw, 2)', password) }] : []),
  ]);

  beforeAll(() => {
    binary = buildGoHarness(new URL('./crypto/crypto-harness.go', import.meta.url).pathname);
  }, 600_000);

  it('every hash ours makes has Go’s form: $2a$, two-digit cost, 53 characters of salt and hash', () => {
    for (const { hash, cost } of made)
      expect(hash).toMatch(new RegExp(`^\\$2a\\$${String(cost).padStart(2, '0')}\\$[./A-Za-z0-9]{53}$`));
    expect(new Set(made.map(({ hash }) => hash)).size).toBe(made.length);
  });

  it('Go verifies each of ours with the right password at the cost asked for, and refuses a wrong one (one more byte in front: a 72-byte one cut at 72 would still match)', async () => {
    const verdicts = await runGoHarness<unknown, Verdict>(binary, [
      ...made.map(({ hash, password }) => ({ check: { hash, password } })),
      ...made.map(({ hash, password }) => ({ check: { hash, password: `x${password}` } })),
    ]);
    expect(verdicts.slice(0, made.length)).toEqual(made.map(({ cost }) => ({ match: true, cost })));
    expect(verdicts.slice(made.length)).toEqual(made.map(({ cost }) => ({ match: false, cost })));
    // The library's own compare agrees.
    for (const { hash, password } of made) {
      expect(bcryptjs.compareSync(password, hash)).toBe(true);
      expect(bcryptjs.compareSync(`x${password}`, hash)).toBe(false);
    }
  });

  it('each hash Go makes verifies with bcryptjs, and has the same prefix as ours', async () => {
    const verdicts = await runGoHarness<unknown, Verdict>(
      binary,
      passwords.map((password) => ({ make: { password, cost: 4 } })),
    );
    passwords.forEach((password, index) => {
      const hash = verdicts[index]?.hash as string;
      expect(hash.slice(0, 7)).toBe('$2a$04$');
      expect(bcryptjs.compareSync(password, hash)).toBe(true);
      expect(bcryptjs.compareSync(`x${password}`, hash)).toBe(false);
    });
  });

  it('decrypts what Go’s rsa.EncryptPKCS1v15 encrypts, for 1024-, 2048- and 3072-bit keys', async () => {
    const messages = ['message', '', 'héllo ✓ 😀', 'x'.repeat(100), '\u0000leading NUL', '{"json": [1, 2]}'];
    for (const modulusLength of [1024, 2048, 3072]) {
      const pair = generateKeyPairSync('rsa', { modulusLength });
      const key = pair.privateKey.export({ format: 'pem', type: 'pkcs1' }).toString();
      const publicKey = pair.publicKey.export({ format: 'pem', type: 'pkcs1' }).toString();
      // The longest message PKCS #1 v1.5 takes: the modulus bytes less 11.
      const all = [...messages, 'm'.repeat(modulusLength / 8 - 11)];
      const verdicts = await runGoHarness<unknown, Verdict>(
        binary,
        all.map((message) => ({ encrypt: { key: publicKey, message: Buffer.from(message).toString('base64') } })),
      );
      all.forEach((message, index) => {
        const ciphertext = verdicts[index]?.ciphertext as string;
        expect(Buffer.from(ciphertext, 'base64')).toHaveLength(modulusLength / 8);
        expect(ours('rsadecrypt(var.ct, var.key)', '', { ct: ciphertext, key })).toBe(message.normalize('NFC'));
      });
    }
  });
});
