import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { promisify } from 'node:util';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsulEmulator, startConsulEmulator } from '../emulators/consul.ts';
import { type GoogleEmulator, startGoogleEmulator } from '../emulators/google.ts';
import { emulatedGoogleEnvironment } from '../support/cloud-engine.ts';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';
import { type OperationResult, runNodeVault } from './node-vault-conformance.ts';
import { type Product, startProduct } from './start-product.ts';

/**
 * Vault's two most used clients, unmodified, against the product as `npm start` runs it: Debian's python3-hvac 0.11.2
 * (`hvac_conformance.py`, run with /usr/bin/python3) and node-vault 0.12.0 (`node-vault-conformance.ts`). Each drives
 * every operation it offers for what the service serves, through its own methods; where real Vault refuses (an OIDC
 * URL on a JWT-only mount, a LIST of an empty mount) the refusal and its status are what is checked.
 */

const run = promisify(execFile);
const redirectUri = 'http://127.0.0.1:8250/oidc/callback';
const jwtIssuer = 'https://ci.example';

let product: Product;
let consul: ConsulEmulator;
let google: GoogleEmulator;
let oidc: TestOidcProvider;
let consulToken: string;
let jwt: string;
let jwtPubkey: string;

beforeAll(async () => {
  google = await startGoogleEmulator();
  // Where the cloud engine calls Google is the operator's configuration: npm start's environment.
  [product, consul, oidc] = await Promise.all([
    startProduct('clients-root', emulatedGoogleEnvironment(google)),
    startConsulEmulator({ version: '1.15.4' }),
    startOidcProvider({ redirectUris: [redirectUri] }),
  ]);
  const bootstrap = await consul.request('PUT', '/v1/acl/bootstrap');
  consulToken = (bootstrap.json as { SecretID: string }).SecretID;
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  jwtPubkey = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  jwt = await new SignJWT({ sub: 'ci-bot' })
    .setProtectedHeader({ alg: 'ES256' })
    .setIssuer(jwtIssuer)
    .setAudience('keyhaven')
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(privateKey);
}, 180_000);

afterAll(async () => {
  await Promise.all([product?.stop(), consul?.close(), google?.close(), oidc?.close()]);
});

function report(results: OperationResult[], client: string): void {
  const failed = results.filter((result) => !result.ok);
  console.log(`${client}: ${results.length - failed.length} of ${results.length} operations passed`);
  for (const failure of failed) {
    console.log(
      `FAILED ${client} ${failure.op}: ${failure.problem}\n  request: ${failure.request}\n  answer:  ${failure.answer}`,
    );
  }
}

describe('Vault clients against npm start', () => {
  it('hvac (python3-hvac 0.11.2) passes every operation it offers for what the service serves', async () => {
    google.addProject('proj-1');
    const root = google.seedServiceAccount('proj-1', 'keyhaven-root');
    const { stdout, stderr } = await run(
      '/usr/bin/python3',
      ['-W', 'ignore::DeprecationWarning', `${import.meta.dirname}/hvac_conformance.py`],
      {
        env: {
          ...process.env,
          VAULT_ADDR: product.secretsUrl,
          ROOT_TOKEN: product.rootToken,
          CONSUL_ADDRESS: consul.address,
          CONSUL_SCHEME: consul.scheme,
          CONSUL_TOKEN: consulToken,
          GOOGLE_OPTIONS: JSON.stringify({ retry_base_ms: '1' }),
          GOOGLE_CREDENTIALS: root.credentials,
          GOOGLE_PROJECT: 'proj-1',
          JWT: jwt,
          JWT_PUBKEY: jwtPubkey,
          JWT_ISSUER: jwtIssuer,
          OIDC_ISSUER: oidc.issuer,
          OIDC_CLIENT_ID: oidc.clientId,
          OIDC_CLIENT_SECRET: oidc.clientSecret,
          OIDC_REDIRECT_URI: redirectUri,
        },
        maxBuffer: 64 * 1024 * 1024,
      },
    ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`hvac_conformance.py failed: ${error.message}\n${error.stdout ?? ''}\n${error.stderr ?? ''}`);
    });
    const results = stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as OperationResult);
    report(results, 'hvac');
    expect(stderr).toBe('');
    expect(results.length).toBeGreaterThan(100);
    expect(
      results
        .filter((result) => !result.ok)
        .map((result) => `${result.op}: ${result.problem} | ${result.request} -> ${result.answer}`),
    ).toEqual([]);
  }, 240_000);

  it('node-vault 0.12.0 passes every operation it offers for what the service serves', async () => {
    const results = await runNodeVault({
      vaultAddr: product.secretsUrl,
      rootToken: product.rootToken,
      jwt,
      jwtPubkey,
      jwtIssuer,
    });
    report(results, 'node-vault');
    expect(results.length).toBeGreaterThan(50);
    expect(
      results
        .filter((result) => !result.ok)
        .map((result) => `${result.op}: ${result.problem} | ${result.request} -> ${result.answer}`),
    ).toEqual([]);
  }, 120_000);
});
