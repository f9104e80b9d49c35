// biome-ignore-all lint/suspicious/noTemplateCurlyInString: HCL's ${…} interpolation is what these tests are about
/**
 * Attack class: the job parser's slow cryptography (`bcrypt()`, `rsadecrypt()` in `POST /v1/jobs/parse`) as a way
 * to burn the server's CPU or crash it.
 *
 * Attackers: a token that may not parse (read-job only), and any caller who may parse, sending a hostile job file.
 * They try: bcrypt at cost 31 (Go's maximum: days of CPU) or at a cost inside Go's range but over this service's
 * allowance, hidden inside `can()`/`try()`; many cheap hashes, in one expression or spread over many attributes and
 * locals; `rsadecrypt` with a huge key (40,000 bits), a large key whose parts disagree, a key with a prime of 1, a
 * truncated or garbage PEM, hundreds of kilobytes of base64, and thousands of decryptions; bcrypt with arguments of
 * every type and count (a seeded property; rsadecrypt is in job-parse-expressions-fuzz.test.ts).
 * They must never reach: a 500, a parse that runs for seconds (each refusal is decided by the allowance before the
 * hashing or the RSA operation starts), the parser stuck for the next caller, anything written. Each refusal is a 403
 * or a 400 naming the problem, the index unmoved.
 */
import { constants, generateKeyPairSync, publicEncrypt, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../../packages/core/src/lib/errors.ts';
import { evaluateString } from '../../packages/core/src/scheduler/cluster/job-parse/expressions.ts';
import { maxCryptoWork } from '../../packages/core/src/scheduler/cluster/job-parse/hcl-crypto-allowance.ts';
import { attackCalls } from '../support/cluster-attacks.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
const pem = pair.privateKey.export({ format: 'pem', type: 'pkcs1' }).toString();
const ciphertext = publicEncrypt(
  { key: pair.publicKey, padding: constants.RSA_PKCS1_PADDING },
  Buffer.from('m'),
).toString('base64');

/** DER for a PKCS #1 RSAPrivateKey from raw integers (none of them need be a real key's). */
function derLength(length: number): Buffer {
  if (length < 128) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}
const derInteger = (value: Buffer) => {
  const body = (value[0] as number) & 0x80 ? Buffer.concat([Buffer.from([0]), value]) : value;
  return Buffer.concat([Buffer.from([0x02]), derLength(body.length), body]);
};
/** A random odd number of exactly `bits` bits. */
const number = (bits: number) => {
  const bytes = randomBytes(bits / 8);
  bytes[0] = (bytes[0] as number) | 0x80;
  bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) | 1;
  return bytes;
};
function fakeKey(bits: number, prime = () => number(bits / 2)): string {
  const fields = [Buffer.from([0]), number(bits), Buffer.from([1, 0, 1]), number(bits), prime(), prime()];
  fields.push(number(bits / 2), number(bits / 2), number(bits / 2));
  const body = Buffer.concat(fields.map(derInteger));
  const der = Buffer.concat([Buffer.from([0x30]), derLength(body.length), body]);
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN RSA PRIVATE KEY-----\n${lines.join('\n')}\n-----END RSA PRIVATE KEY-----\n`;
}

const jobWith = (meta: Record<string, string>, key = pem, locals = '') => `
variable "key" {
  default = base64decode("${Buffer.from(key).toString('base64')}")
}
${locals}
job "x" {
  meta = {
${Object.entries(meta)
  .map(([name, expression]) => `    ${name} = ${expression}`)
  .join('\n')}
  }
}`;

describe('attack: bcrypt and rsadecrypt in a job file', () => {
  let h: SchedulerService;
  let root: string;
  const parse = (JobHCL: string, token = root) => h.call('POST', '/v1/jobs/parse', { token, body: { JobHCL } });

  const calls = attackCalls(() => ({ h, root }));
  /** A refusal (400 unless given) that writes nothing: its text. */
  const refused = (call: Parameters<typeof calls.refused>[0], status = 400) => calls.refused(call, status);

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
  });
  afterAll(() => h.close());

  it('a token that may not parse gets 403 before any hashing', async () => {
    const name = 'read-only';
    const rules = 'namespace "default" { capabilities = ["read-job"] }';
    expect((await h.call('POST', `/v1/acl/policy/${name}`, { token: root, body: { Rules: rules } })).status).toBe(200);
    const token = (await h.call('POST', '/v1/acl/token', { token: root, body: { Type: 'client', Policies: [name] } }))
      .body.SecretID as string;
    expect(await refused(parse(jobWith({ a: 'bcrypt("x", 31)' }), token), 403)).toBe('Permission denied');
  });

  it('bcrypt at a cost Go takes but the allowance does not is a 400 before hashing, even inside can() or try()', async () => {
    expect(maxCryptoWork).toBe(512);
    for (const expression of [
      'bcrypt("x", 31)',
      'bcrypt("x", 14)',
      'can(bcrypt("x", 20))',
      'try(bcrypt("x", 31), "fallback")',
      '"${bcrypt("x", 25)}"',
    ]) {
      const text = await refused(parse(jobWith({ a: expression })));
      expect(text, expression).toMatch(
        /Expression too costly; bcrypt of cost \d+ would take the job file past its cryptography allowance \(512 units a parse/,
      );
    }
    // Go's own range is checked first, with Go's text.
    expect(await refused(parse(jobWith({ a: 'bcrypt("x", 32)' })))).toMatch(
      /cost 32 is outside allowed range \(4,31\)/,
    );
  });

  it('many calls, in one expression or spread over attributes and locals, share one allowance per parse', async () => {
    // 2048-bit decryptions (2 units each, well under a millisecond) spend the allowance cheaply: 200 of them are 400.
    const decryptions = (count: number) => `length([for i in range(${count}) : rsadecrypt("${ciphertext}", var.key)])`;
    const spread = { a: decryptions(100), b: decryptions(100), c: decryptions(100) };
    expect(await refused(parse(jobWith(spread)))).toMatch(/rsadecrypt would take the job file past/);
    // Spent in a local, the allowance is gone for the job's attributes: one cost-7 hash (8 units) fits, cost 10 does not.
    const locals = `locals {\n  spent = ${decryptions(230)}\n}`;
    expect(
      await refused(parse(jobWith({ a: 'local.spent', b: 'bcrypt("x", 7)', c: 'bcrypt("x")' }, pem, locals))),
    ).toMatch(/bcrypt of cost 10 would take the job file past its cryptography allowance/);
    expect(await refused(parse(jobWith({ a: '[for i in range(100) : bcrypt("x", 9)]' })))).toMatch(
      /bcrypt of cost 9 would take the job file past/,
    );
    // Within the allowance the same calls are fine, and a new parse has a new allowance.
    const fine = await parse(jobWith({ a: 'local.spent', b: 'bcrypt("x", 7)' }, pem, locals));
    expect(fine.status, fine.text).toBe(200);
    expect(fine.body.Meta).toEqual({ a: '230', b: expect.stringMatching(/^\$2a\$07\$/) });
  });

  it('rsadecrypt: a huge key, many decryptions, inconsistent or malformed keys are 400s, never a 500', async () => {
    expect(await refused(parse(jobWith({ a: `rsadecrypt("${ciphertext}", var.key)` }, fakeKey(40_000))))).toMatch(
      /Expression too costly; rsadecrypt refuses a key of \d+ bytes: at most 10240 are read \(an RSA key of 16384 bits/,
    );
    // 16,400 bits fits in the DER bound but not in the key-size one.
    expect(await refused(parse(jobWith({ a: `rsadecrypt("${ciphertext}", var.key)` }, fakeKey(16_400))))).toMatch(
      /Expression too costly; rsadecrypt refuses a 16400-bit key: at most 16384 bits/,
    );
    // Each 2048-bit decryption is 2 units: the 257th is refused, wherever the others ran.
    expect(
      await refused(parse(jobWith({ a: `[for i in range(1000) : rsadecrypt("${ciphertext}", var.key)]` }))),
    ).toMatch(/rsadecrypt would take the job file past/);
    // A large key that is affordable but whose parts disagree: refused as Go refuses it, before any RSA operation.
    expect(await refused(parse(jobWith({ a: `rsadecrypt("${ciphertext}", var.key)` }, fakeKey(16_384))))).toMatch(
      /Call to function "rsadecrypt" failed: crypto\/rsa: invalid modulus/,
    );
    expect(
      await refused(
        parse(
          jobWith(
            { a: `rsadecrypt("${ciphertext}", var.key)` },
            fakeKey(2048, () => Buffer.from([1])),
          ),
        ),
      ),
    ).toMatch(/crypto\/rsa: prime factor is <= 1/);
    const body = pem.split('\n').slice(1, -2);
    for (const [key, error] of [
      [`-----BEGIN RSA PRIVATE KEY-----\n${body.join('\n')}\n`, /failed to parse key: no key found/],
      [
        `-----BEGIN RSA PRIVATE KEY-----\n${body.slice(0, 5).join('\n')}\n-----END RSA PRIVATE KEY-----\n`,
        /asn1: structure error/,
      ],
      [
        `-----BEGIN RSA PRIVATE KEY-----\n${'A'.repeat(4000)}\n-----END RSA PRIVATE KEY-----\n`,
        /asn1: structure error/,
      ],
      [
        `-----BEGIN RSA PRIVATE KEY-----\n${'A'.repeat(150_000)}\n-----END RSA PRIVATE KEY-----\n`,
        /Expression too costly; rsadecrypt refuses a key of 112500 bytes: at most 10240 are read/,
      ],
      ['-----BEGIN RSA PRIVATE KEY-----\n%%%%\n-----END RSA PRIVATE KEY-----\n', /failed to parse key: no key found/],
      ['-----BEGIN RSA PRIVATE KEY\nAAAA\n-----END RSA PRIVATE KEY-----\n', /failed to parse key: no key found/],
    ] as const) {
      const text = await refused(parse(jobWith({ a: `rsadecrypt("${ciphertext}", var.key)` }, key)));
      expect(text).toMatch(error);
      expect(text).not.toContain('AAAAAAAA');
    }
    expect(await refused(parse(jobWith({ a: `rsadecrypt("${'A'.repeat(150_000)}", var.key)` })))).toMatch(
      /crypto\/rsa: decryption error/,
    );
  });

  it('the parser still answers the next caller', async () => {
    const out = await parse(jobWith({ a: `rsadecrypt("${ciphertext}", var.key)`, b: 'bcrypt("x", 4)' }));
    expect(out.status, out.text).toBe(200);
    expect(out.body.Meta.a).toBe('m');
  });

  it('bcrypt with arguments of every type and count (cheap costs only) is a value or a 400, never another exception', () => {
    const args = ['"a"', '""', '4', '"5"', '2.5', '1e30', '-1e30', '32', '14', 'null', '[]', '{}', 'true', '[4]'];
    const found: string[] = [];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...args), { maxLength: 3 }), fc.boolean(), (given, expand) => {
        // A call left with one argument hashes at the default cost, 10: ~100 ms each, kept out of the property.
        const last = given[given.length - 1];
        const expanded = expand && last !== undefined ? ({ '[]': 0, '[4]': 1 } as Record<string, number>)[last] : 1;
        fc.pre(given.length - 1 + (expanded ?? Number.NaN) !== 1);
        const text = `\${bcrypt(${given.join(', ')}${expand && given.length > 0 ? '...' : ''})}`;
        try {
          const value = evaluateString(text, { variables: new Map(), locals: new Map() }, 'fuzz');
          if (typeof value !== 'string' || !value.startsWith('$2a$')) found.push(`${text}: ${JSON.stringify(value)}`);
        } catch (error) {
          if (!(error instanceof DomainError) || error.kind !== 'invalid') found.push(`${text}: ${String(error)}`);
        }
        return true;
      }),
      { numRuns: 300, seed: 3 },
    );
    expect(found).toEqual([]);
  });
});
