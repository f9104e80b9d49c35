// biome-ignore-all lint/suspicious/noTemplateCurlyInString: HCL's ${…} interpolation is what these tests are about
/**
 * `bcrypt()` and `rsadecrypt()` in a job file sent to `POST /v1/jobs/parse`, as Nomad's jobspec2 evaluates them
 * (go-cty-funcs' crypto functions): the values land in the parsed job, and Nomad's own refusals come back as 400s with
 * its texts. The cases the hcl2 differential cannot hold, because Debian's Go 1.19 and x/crypto 0.4.0 behave as Nomad
 * no longer does, are here: a password over 72 bytes (x/crypto refuses it since 2023) and a key under 1024 bits (Go
 * refuses it since 1.24).
 */
import { constants, generateKeyPairSync, publicEncrypt } from 'node:crypto';
import bcryptjs from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
const pem = pair.privateKey.export({ format: 'pem', type: 'pkcs1' }).toString();
const b64 = (text: string) => Buffer.from(text).toString('base64');
const encrypt = (message: string, key = pair.publicKey) =>
  publicEncrypt({ key, padding: constants.RSA_PKCS1_PADDING }, Buffer.from(message)).toString('base64');

/** A job whose meta holds one expression, with the key given as a variable (base64, so it fits on one line). */
const jobWith = (meta: Record<string, string>, key = pem) => `
variable "key" {
  default = base64decode("${b64(key)}")
}
job "crypto" {
  meta = {
${Object.entries(meta)
  .map(([name, expression]) => `    ${name} = ${expression}`)
  .join('\n')}
  }
}`;

describe('POST /v1/jobs/parse: bcrypt and rsadecrypt', () => {
  let h: SchedulerService;
  let root: string;
  const parse = (JobHCL: string, Variables?: string) =>
    h.call('POST', '/v1/jobs/parse', { token: root, body: { JobHCL, ...(Variables ? { Variables } : {}) } });

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
  });
  afterAll(() => h.close());

  it('puts a bcrypt hash Go would make ($2a$, cost 10 by default) and a decrypted secret in the job, writing nothing', async () => {
    const before = await h.scheduler.state.currentIndex();
    const out = await parse(
      jobWith({
        hash: 'bcrypt("hunter2")',
        cheap: 'bcrypt(var.password, 5)',
        secret: `rsadecrypt("${encrypt('the database password')}", var.key)`,
        greeting: `"hello \${rsadecrypt("${encrypt('wörld')}", var.key)}"`,
      }).replace('job "crypto"', 'variable "password" {}\njob "crypto"'),
      'password = "correct horse"',
    );
    expect(out.status, out.text).toBe(200);
    const meta = out.body.Meta as Record<string, string>;
    expect(meta.hash).toMatch(/^\$2a\$10\$[./A-Za-z0-9]{53}$/);
    expect(bcryptjs.compareSync('hunter2', meta.hash as string)).toBe(true);
    expect(meta.cheap).toMatch(/^\$2a\$05\$/);
    expect(bcryptjs.compareSync('correct horse', meta.cheap as string)).toBe(true);
    expect(bcryptjs.compareSync('correct horsE', meta.cheap as string)).toBe(false);
    expect(meta.secret).toBe('the database password');
    expect(meta.greeting).toBe('hello wörld');
    expect(await h.scheduler.state.currentIndex()).toBe(before);
  });

  it('answers Nomad’s refusals as 400s with its texts', async () => {
    const small = generateKeyPairSync('rsa', { modulusLength: 512 });
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const cases: Array<[string, string, RegExp]> = [
      [
        pem,
        'bcrypt("x", 32)',
        /Call to function "bcrypt" failed: error occured generating password crypto\/bcrypt: cost 32 is outside allowed range \(4,31\)/,
      ],
      [
        pem,
        `bcrypt("${'p'.repeat(73)}", 4)`,
        /Call to function "bcrypt" failed: error occured generating password bcrypt: password length exceeds 72 bytes/,
      ],
      [pem, 'bcrypt("x", 4.5)', /Call to function "bcrypt" failed: value must be a whole number/],
      [pem, 'bcrypt("x", 4, 5)', /bcrypt\(\) takes no more than two arguments/],
      [
        small.privateKey.export({ format: 'pem', type: 'pkcs1' }).toString(),
        `rsadecrypt("${encrypt('m', small.publicKey)}", var.key)`,
        /crypto\/rsa: 512-bit keys are insecure \(see https:\/\/go.dev\/pkg\/crypto\/rsa#hdr-Minimum_key_size\)/,
      ],
      [
        other.privateKey.export({ format: 'pem', type: 'pkcs1' }).toString(),
        `rsadecrypt("${encrypt('m')}", var.key)`,
        /Call to function "rsadecrypt" failed: crypto\/rsa: decryption error/,
      ],
      [
        pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
        `rsadecrypt("${encrypt('m')}", var.key)`,
        /x509: failed to parse private key \(use ParsePKCS8PrivateKey instead for this key format\)/,
      ],
      [
        pair.privateKey.export({ format: 'pem', type: 'pkcs1', cipher: 'aes-128-cbc', passphrase: 'pass' }).toString(),
        `rsadecrypt("${encrypt('m')}", var.key)`,
        /failed to parse key: password protected keys are not supported. Please decrypt the key prior to use/,
      ],
      ['no key here', `rsadecrypt("${encrypt('m')}", var.key)`, /failed to parse key: no key found/],
      [
        `-----BEGIN RSA PRIVATE KEY-----\n${Buffer.concat([pair.privateKey.export({ format: 'der', type: 'pkcs1' }), Buffer.from([0])]).toString('base64')}\n-----END RSA PRIVATE KEY-----\n`,
        `rsadecrypt("${encrypt('m')}", var.key)`,
        /Call to function "rsadecrypt" failed: asn1: syntax error: trailing data/,
      ],
      [
        pem,
        'rsadecrypt("not base64!", var.key)',
        /failed to decode input "not base64!": cipher text must be base64-encoded/,
      ],
    ];
    for (const [key, expression, error] of cases) {
      const out = await parse(jobWith({ value: expression }, key));
      expect(out.status, expression).toBe(400);
      expect(out.text, expression).toMatch(error);
      expect(out.text).toMatch(/^Failed to parse job: job "crypto" › meta: Error in function call; /);
    }
  });

  it('try and can see those refusals as any function error', async () => {
    const out = await parse(
      jobWith({
        cost: 'try(bcrypt("x", 32), "fallback")',
        key: `can(rsadecrypt("${encrypt('m')}", "no key"))`,
        works: `can(rsadecrypt("${encrypt('m')}", var.key))`,
      }),
    );
    expect(out.status, out.text).toBe(200);
    expect(out.body.Meta).toEqual({ cost: 'fallback', key: 'false', works: 'true' });
  });
});
