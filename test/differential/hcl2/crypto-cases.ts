// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are HCL expressions
/**
 * bcrypt and rsadecrypt cases for the hcl2 differential: keys made fresh per run (none is committed), ciphertexts
 * made with node's `publicEncrypt` (PKCS #1 v1.5, which node still does; only decryption is refused), and
 * expressions whose value does not depend on bcrypt's random salt. Left out, because Debian's Go 1.19 and x/crypto
 * 0.4.0 answer them differently from the Go and x/crypto Nomad is built with (`test/scheduler/job-parse-crypto.test.ts`
 * holds them): keys under 1024 bits (refused since Go 1.24) and passwords over 72 bytes (refused since x/crypto 0.?,
 * cut before).
 */
import { constants, generateKeyPairSync, publicEncrypt } from 'node:crypto';

const rsa = (modulusLength: number) => generateKeyPairSync('rsa', { modulusLength });
const key = rsa(2048);
const other = rsa(2048);
const small = rsa(1024);
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });

const pkcs1 = (pair: ReturnType<typeof rsa>) => pair.privateKey.export({ format: 'pem', type: 'pkcs1' }).toString();
const encrypt = (pair: ReturnType<typeof rsa>, message: Buffer | string) =>
  publicEncrypt({ key: pair.publicKey, padding: constants.RSA_PKCS1_PADDING }, Buffer.from(message)).toString('base64');
/** A raw RSA block (no padding added), for ciphertexts whose padding is wrong once decrypted. */
const raw = (pair: ReturnType<typeof rsa>, block: Buffer) =>
  publicEncrypt({ key: pair.publicKey, padding: constants.RSA_NO_PADDING }, block).toString('base64');
const block = (bytes: number[], size = 256) => {
  const out = Buffer.alloc(size, 0x5a);
  bytes.forEach((byte, index) => {
    out[index] = byte;
  });
  return out;
};
const modulus = Buffer.from(key.publicKey.export({ format: 'jwk' }).n as string, 'base64url');
const leadingZero = (() => {
  for (let attempt = 0; attempt < 2000; attempt++) {
    const ciphertext = Buffer.from(encrypt(key, `zero ${attempt}`), 'base64');
    if (ciphertext[0] === 0) return { text: `zero ${attempt}`, short: ciphertext.subarray(1).toString('base64') };
  }
  return { text: 'zero none', short: encrypt(key, 'zero none') };
})();

export const cryptoVariables = {
  rsa_key: pkcs1(key),
  rsa_other: pkcs1(other),
  rsa_1024: pkcs1(small),
  rsa_pkcs8: key.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  rsa_encrypted: key.privateKey
    .export({ format: 'pem', type: 'pkcs1', cipher: 'aes-256-cbc', passphrase: 'secret' })
    .toString(),
  rsa_public: key.publicKey.export({ format: 'pem', type: 'pkcs1' }).toString(),
  ec_key: ec.privateKey.export({ format: 'pem', type: 'sec1' }).toString(),
  rsa_wrapped: `some text before\n${pkcs1(key)}and after\n`,
  rsa_crlf: pkcs1(key).replace(/\n/g, '\r\n'),
  rsa_mislabelled: pkcs1(key).replace(/RSA PRIVATE KEY/g, 'SOMETHING ELSE'),
  rsa_bad_end: pkcs1(key).replace('-----END RSA PRIVATE KEY-----', '-----END OTHER KEY-----'),
  rsa_second: `-----BEGIN BROKEN-----\n!!!\n-----END BROKEN-----\n${pkcs1(key)}`,
  // encoding/pem's edges: headers with and without the blank line, spaces after the END line, a BEGIN not at a
  // line start, an indented body, a type line without its dashes, an END for another type, an empty block.
  rsa_headers: pkcs1(key).replace('-----\n', '-----\nComment: a key\nOther: x\n\n'),
  rsa_headers_no_blank: pkcs1(key).replace('-----\n', '-----\nComment: a key\n'),
  rsa_end_spaces: pkcs1(key)
    .replace('KEY-----\n', 'KEY-----  \t\n')
    .replace(/KEY-----\n$/, 'KEY----- \n'),
  rsa_end_suffix: pkcs1(key).replace(/-----END RSA PRIVATE KEY-----\n$/, '-----END RSA PRIVATE KEY-----trailing\n'),
  rsa_inline_begin: `x ${pkcs1(key)}`,
  rsa_indented: pkcs1(key).replace(/\n([A-Za-z0-9+/])/g, '\n  $1'),
  rsa_tabbed_body: pkcs1(key).replace(/\n([A-Za-z0-9+/]{8})/g, '\n$1\t'),
  rsa_no_final_newline: pkcs1(key).trimEnd(),
  rsa_type_no_dashes: pkcs1(key).replace('-----BEGIN RSA PRIVATE KEY-----', '-----BEGIN RSA PRIVATE KEY'),
  rsa_empty_block: '-----BEGIN RSA PRIVATE KEY-----\n-----END RSA PRIVATE KEY-----\n',
  rsa_proc_type_other: pkcs1(key).replace('-----\n', '-----\nProc-Type: 4,CLEAR\n\n'),
  rsa_pkcs8_labelled_pkcs1: key.privateKey
    .export({ format: 'pem', type: 'pkcs8' })
    .toString()
    .replace(/PRIVATE KEY/g, 'RSA PRIVATE KEY'),
  rsa_trailing_der: (() => {
    const der = Buffer.concat([key.privateKey.export({ format: 'der', type: 'pkcs1' }), Buffer.from([0, 0])]);
    return `-----BEGIN RSA PRIVATE KEY-----\n${der.toString('base64')}\n-----END RSA PRIVATE KEY-----\n`;
  })(),
  rsa_garbage_der: '-----BEGIN RSA PRIVATE KEY-----\naGVsbG8gd29ybGQ=\n-----END RSA PRIVATE KEY-----\n',
  rsa_truncated: pkcs1(key).replace(/\n[A-Za-z0-9+/=]+\n-----END/, '\n-----END'),
  ct_message: encrypt(key, 'message'),
  ct_empty: encrypt(key, ''),
  ct_unicode: encrypt(key, 'héllo ✓ \u0065\u0301'),
  ct_longest: encrypt(key, 'm'.repeat(245)),
  ct_1024: encrypt(small, 'small key'),
  ct_binary: encrypt(key, Buffer.from([0xff, 0xfe, 0x00, 0x41])),
  ct_newlines: encrypt(key, 'wrapped').replace(/(.{64})/g, '$1\n'),
  ct_spaces: encrypt(key, 'spaced').replace(/(.{64})/g, '$1 '),
  ct_short: leadingZero.short,
  ct_short_text: leadingZero.text,
  ct_too_long: Buffer.concat([Buffer.from([1]), Buffer.from(encrypt(key, 'x'), 'base64')]).toString('base64'),
  ct_modulus: modulus.toString('base64'),
  ct_zero: Buffer.alloc(256).toString('base64'),
  ct_bad_type: raw(key, block([0, 1])),
  ct_bad_lead: raw(key, block([1, 2]).subarray(0, 256)),
  ct_no_separator: raw(key, block([0, 2])),
  ct_short_ps: raw(key, block([0, 2, 1, 2, 3, 4, 5, 6, 7, 0, 65])),
  ct_min_ps: raw(key, block([0, 2, 1, 2, 3, 4, 5, 6, 7, 8, 0, 65, 66])),
  ct_unpadded_b64: encrypt(key, 'x').replace(/=+$/, ''),
};

export function cryptoCases(): string[] {
  return [
    // bcrypt: values that do not depend on the salt
    'length(bcrypt("hunter2"))',
    'substr(bcrypt("hunter2"), 0, 7)',
    'substr(bcrypt("hunter2", 4), 0, 7)',
    'substr(bcrypt("x", 5), 0, 7)',
    'substr(bcrypt("x", 3), 0, 7)',
    'substr(bcrypt("x", 0), 0, 7)',
    'substr(bcrypt("x", -1), 0, 7)',
    'substr(bcrypt("x", "4"), 0, 7)',
    'substr(bcrypt(""), 0, 7)',
    'substr(bcrypt(12, 4), 0, 4)',
    'substr(bcrypt(true, 4), 0, 4)',
    `length(bcrypt("${'p'.repeat(72)}", 4))`,
    'length(bcrypt("héllo ✓", 4))',
    'bcrypt("x", 4) == bcrypt("x", 4)',
    'can(bcrypt("x", 4))',
    'bcrypt("x", 32)',
    'bcrypt("x", 100)',
    'can(bcrypt("x", 32))',
    'bcrypt("x", 4.5)',
    'bcrypt("x", "four")',
    'bcrypt("x", 4, 5)',
    'bcrypt("x", null)',
    'bcrypt(null)',
    'bcrypt()',
    'bcrypt(["a"])',
    'bcrypt("x", [4])',
    // rsadecrypt
    'rsadecrypt(var.ct_message, var.rsa_key)',
    'rsadecrypt(var.ct_empty, var.rsa_key)',
    'rsadecrypt(var.ct_unicode, var.rsa_key)',
    'rsadecrypt(var.ct_longest, var.rsa_key)',
    'rsadecrypt(var.ct_1024, var.rsa_1024)',
    'rsadecrypt(var.ct_binary, var.rsa_key)',
    'rsadecrypt(var.ct_newlines, var.rsa_key)',
    'rsadecrypt(var.ct_spaces, var.rsa_key)',
    'rsadecrypt(var.ct_short, var.rsa_key) == var.ct_short_text',
    'rsadecrypt(var.ct_message, var.rsa_wrapped)',
    'rsadecrypt(var.ct_message, var.rsa_crlf)',
    'rsadecrypt(var.ct_message, var.rsa_mislabelled)',
    'rsadecrypt(var.ct_message, var.rsa_second)',
    'rsadecrypt(var.ct_message, var.rsa_other)',
    'rsadecrypt(var.ct_message, var.rsa_pkcs8)',
    'rsadecrypt(var.ct_message, var.rsa_encrypted)',
    'rsadecrypt(var.ct_message, var.rsa_public)',
    'rsadecrypt(var.ct_message, var.ec_key)',
    'rsadecrypt(var.ct_message, var.rsa_bad_end)',
    'rsadecrypt(var.ct_message, var.rsa_headers)',
    'rsadecrypt(var.ct_message, var.rsa_headers_no_blank)',
    'rsadecrypt(var.ct_message, var.rsa_end_spaces)',
    'rsadecrypt(var.ct_message, var.rsa_end_suffix)',
    'rsadecrypt(var.ct_message, var.rsa_inline_begin)',
    'rsadecrypt(var.ct_message, var.rsa_indented)',
    'rsadecrypt(var.ct_message, var.rsa_tabbed_body)',
    'rsadecrypt(var.ct_message, var.rsa_no_final_newline)',
    'rsadecrypt(var.ct_message, var.rsa_type_no_dashes)',
    'rsadecrypt(var.ct_message, var.rsa_empty_block)',
    'rsadecrypt(var.ct_message, var.rsa_proc_type_other)',
    'rsadecrypt(var.ct_message, var.rsa_pkcs8_labelled_pkcs1)',
    'rsadecrypt(var.ct_message, var.rsa_trailing_der)',
    'rsadecrypt(var.ct_message, var.rsa_garbage_der)',
    'rsadecrypt(var.ct_message, var.rsa_truncated)',
    'rsadecrypt(var.ct_message, "bad key")',
    'rsadecrypt(var.ct_message, "")',
    'rsadecrypt("bad cipher", var.rsa_key)',
    'rsadecrypt("", var.rsa_key)',
    'rsadecrypt(var.ct_unpadded_b64, var.rsa_key)',
    'rsadecrypt(var.ct_too_long, var.rsa_key)',
    'rsadecrypt(var.ct_modulus, var.rsa_key)',
    'rsadecrypt(var.ct_zero, var.rsa_key)',
    'rsadecrypt(var.ct_bad_type, var.rsa_key)',
    'rsadecrypt(var.ct_bad_lead, var.rsa_key)',
    'rsadecrypt(var.ct_no_separator, var.rsa_key)',
    'rsadecrypt(var.ct_short_ps, var.rsa_key)',
    'rsadecrypt(var.ct_min_ps, var.rsa_key)',
    'rsadecrypt(null, var.rsa_key)',
    'rsadecrypt(var.ct_message, null)',
    'rsadecrypt(var.ct_message)',
    'rsadecrypt(var.ct_message, var.rsa_key, 1)',
    'rsadecrypt(var.ct_message, ["k"])',
    'try(rsadecrypt(var.ct_message, var.rsa_other), "fallback")',
    'can(rsadecrypt(var.ct_message, var.rsa_key))',
  ];
}
