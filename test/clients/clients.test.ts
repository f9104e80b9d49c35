import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsulEmulator, startConsulEmulator } from '../emulators/consul.ts';
import { type GoogleEmulator, startGoogleEmulator } from '../emulators/google.ts';
import { emulatedGoogleEnvironment } from '../support/cloud-engine.ts';
import { mariadbInstalled, startMariaDb } from '../support/mariadb.ts';
import { vaultKvGet, vaultKvList } from './vault-cli.ts';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';
import { type OperationResult, runNodeVault } from './node-vault-conformance.ts';
import { type Product, startProduct } from './start-product.ts';

/**
 * Vault's two most used clients, unmodified, against the product as `npm start` runs it: Debian's python3-hvac 0.11.2
 * (`hvac_conformance.py`, run with /usr/bin/python3) and node-vault 0.12.0 (`node-vault-conformance.ts`). Each drives
 * every operation it offers for what the service serves, through its own methods; where real Vault refuses (an OIDC
 * URL on a JWT-only mount, a LIST of an empty mount) the refusal and its status are what is checked. Beside them, on
 * the same `npm start`, a real consumer of Vault: MariaDB's `hashicorp_key_management` plugin (Debian's), with its
 * default settings, keeping a private server's InnoDB encryption keys in `secret/`.
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

/** The request lines `npm start` logged for a path: its JSON log has one per request, with the status answered. */
function loggedRequests(output: string, requestPath: string): Array<{ method: string; status: number }> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes('"request"'))
    .map((line) => JSON.parse(line) as { msg?: string; path?: string; method: string; status: number })
    .filter((entry) => entry.path === requestPath);
}

describe("MariaDB's hashicorp_key_management plugin against npm start", () => {
  it('keeps an encrypted table readable across a restart, with the plugin at its defaults and a narrow token', async () => {
    expect(
      mariadbInstalled(),
      'mariadb-server and mariadb-plugin-hashicorp-key-management (install-test-deps.sh)',
    ).toBe(true);
    const root = { 'X-Vault-Token': product.rootToken, 'Content-Type': 'application/json' };
    const vault = async (method: string, url: string, body?: unknown) => {
      const response = await fetch(`${product.secretsUrl}/v1/${url}`, {
        method,
        headers: root,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    };
    // What the plugin reads: the mount's tune (for its kv version check) and the keys. Nothing else.
    const policy =
      'path "secret/data/*" { capabilities = ["read"] }\npath "sys/mounts/secret/tune" { capabilities = ["read"] }';
    expect((await vault('PUT', 'sys/policies/acl/mariadb-keys', { policy })).status).toBe(204);
    const token = (await vault('POST', 'auth/token/create', { policies: ['mariadb-keys'], ttl: '1h' })).body.auth
      .client_token as string;
    // Key 1 (InnoDB's default key id), a 256-bit AES key as hex, as the plugin's documentation stores it.
    const key = randomBytes(32).toString('hex');
    expect((await vault('POST', 'secret/data/1', { data: { data: key } })).status).toBe(200);

    const mariadb = await startMariaDb({ vaultUrl: `${product.secretsUrl}/v1/secret`, token });
    try {
      const marker = `keyhaven-plaintext-${randomBytes(6).toString('hex')}`;
      await mariadb.sql(
        `CREATE DATABASE shop; CREATE TABLE shop.orders (id INT PRIMARY KEY, note VARCHAR(100)) ENGINE=InnoDB ENCRYPTED=YES;` +
          `INSERT INTO shop.orders VALUES (1, '${marker}'), (2, 'second');`,
      );
      const encryption = await mariadb.sql(
        "SELECT ENCRYPTION_SCHEME, CURRENT_KEY_ID FROM information_schema.INNODB_TABLESPACES_ENCRYPTION WHERE NAME = 'shop/orders'",
      );
      expect(encryption.trim()).toBe('1\t1');

      await mariadb.restart();
      expect(await mariadb.sql('SELECT id, note FROM shop.orders ORDER BY id')).toBe(`1\t${marker}\n2\tsecond\n`);
      // The rows are on disk only encrypted.
      const tableFile = await readFile(path.join(mariadb.dataDir, 'shop', 'orders.ibd'));
      expect(tableFile.includes(marker)).toBe(false);
      expect((await readdir(path.join(mariadb.dataDir, 'shop'))).sort()).toEqual([
        'db.opt',
        'orders.frm',
        'orders.ibd',
      ]);
      const log = await mariadb.errorLog();
      expect(log).not.toMatch(/hashicorp: .*(error|failed)/i);

      // Both starts checked the mount's kv version (the plugin's default) and read the key, with the narrow token.
      const output = product.output();
      expect(loggedRequests(output, '/v1/sys/mounts/secret/tune').map((entry) => entry.status)).toEqual([200, 200]);
      const keyReads = loggedRequests(output, '/v1/secret/data/1').filter((entry) => entry.method === 'GET');
      expect(keyReads.length).toBeGreaterThanOrEqual(2);
      expect(keyReads.every((entry) => entry.status === 200)).toBe(true);
    } finally {
      await mariadb.stop();
    }
  }, 120_000);
});

describe("the vault CLI's kv calls against npm start (test/clients/vault-cli.ts)", () => {
  const rootCall = async (method: string, url: string, body?: unknown) => {
    const response = await fetch(`${product.secretsUrl}/v1/${url}`, {
      method,
      headers: { 'X-Vault-Token': product.rootToken, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };

  it('vault kv get -mount=secret app/config, and -version, as the README shows', async () => {
    expect((await rootCall('POST', 'secret/data/app/config', { data: { debug: 'on' } })).status).toBe(200);
    expect((await rootCall('POST', 'secret/data/app/config', { data: { debug: 'off' } })).status).toBe(200);
    const cli = { addr: product.secretsUrl, token: product.rootToken };

    const latest = await vaultKvGet(cli, 'secret', 'app/config');
    expect(latest.requests).toEqual(['GET /v1/sys/internal/ui/mounts/secret', 'GET /v1/secret/data/app/config']);
    expect(latest.secret?.data).toMatchObject({ data: { debug: 'off' }, metadata: { version: 2, destroyed: false } });

    const first = await vaultKvGet(cli, 'secret', '/app/config', 1);
    expect(first.requests[1]).toBe('GET /v1/secret/data/app/config?version=1');
    expect(first.secret?.data).toMatchObject({ data: { debug: 'on' }, metadata: { version: 1 } });

    // A deleted version is still shown (kvReadRequest takes a 404 that carries data), and a missing one is not.
    expect((await rootCall('DELETE', 'secret/data/app/config')).status).toBe(204);
    const deleted = await vaultKvGet(cli, 'secret', 'app/config');
    expect(deleted.secret?.data).toMatchObject({ data: null, metadata: { version: 2 } });
    expect(deleted.secret?.data?.metadata).toHaveProperty('deletion_time', expect.stringMatching(/^\d{4}-/));
    expect((await vaultKvGet(cli, 'secret', 'app/missing')).secret).toBeUndefined();
  });

  it('vault kv list -mount=secret, vault kv get -mount=kv on version 1, and a narrow token', async () => {
    const cli = { addr: product.secretsUrl, token: product.rootToken };
    expect((await rootCall('POST', 'secret/data/cli/one', { data: { a: '1' } })).status).toBe(200);
    const listed = await vaultKvList(cli, 'secret');
    expect(listed.requests).toEqual(['GET /v1/sys/internal/ui/mounts/secret', 'GET /v1/secret/metadata?list=true']);
    expect(listed.secret?.data?.keys).toEqual(expect.arrayContaining(['cli/']));
    const under = await vaultKvList(cli, 'secret', 'cli/');
    expect(under.requests[1]).toBe('GET /v1/secret/metadata/cli?list=true');
    expect(under.secret?.data?.keys).toEqual(['one']);

    expect((await rootCall('POST', 'kv/cli/one', { v: 'x' })).status).toBe(204);
    const v1 = await vaultKvGet(cli, 'kv', 'cli/one');
    expect(v1.requests).toEqual(['GET /v1/sys/internal/ui/mounts/kv', 'GET /v1/kv/cli/one']);
    expect(v1.secret?.data).toEqual({ v: 'x' });

    const policy = 'path "secret/data/cli/*" { capabilities = ["read"] }';
    expect((await rootCall('PUT', 'sys/policies/acl/cli-reader', { policy })).status).toBe(204);
    const narrow = (await rootCall('POST', 'auth/token/create', { policies: ['cli-reader'], ttl: '10m' })).body.auth
      .client_token as string;
    const read = await vaultKvGet({ addr: product.secretsUrl, token: narrow }, 'secret', 'cli/one');
    expect(read.secret?.data?.data).toEqual({ a: '1' });
    await expect(vaultKvGet({ addr: product.secretsUrl, token: narrow }, 'kv', 'cli/one')).rejects.toThrow(/Code: 403/);
  });
});
