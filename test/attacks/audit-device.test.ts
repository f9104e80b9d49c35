import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

/**
 * CVE-2025-6000 / HCSEC-2025-14: an audit device as a way to run code. Whoever may enable an audit device (a
 * sudo token, or a narrow token if the sudo check were missing) points a `file` device at a place where its
 * lines are read as code or state (the data directory, the repository, `node_modules`), gives the file an
 * executable `mode`, and a `prefix` such as `#!/bin/sh`; the lines' content is then partly chosen by any caller
 * whose request is audited. Vault's fix: execute bits refused, `prefix` only when the operator allows it
 * (`allow_audit_log_prefixing`), no path in the plugin directory. Here the same, with the data directory and the
 * code as the protected places, `..` and symlinks resolved. Every refusal is a 400 naming what is wrong, with
 * nothing enabled and no file created.
 */

const repo = path.resolve(import.meta.dirname, '../..');
const scratch = mkdtempSync(path.join(tmpdir(), 'keyhaven-attack-audit-'));
const dataDir = path.join(scratch, 'data');
mkdirSync(dataDir);
// Read when the core starts, as `npm start` reads it: this harness's data directory is `dataDir`.
process.env.KEYHAVEN_DATA_DIR = dataDir;
delete process.env.KEYHAVEN_ALLOW_AUDIT_LOG_PREFIXING;

const outside = path.join(scratch, 'logs');
mkdirSync(outside);
const linkToData = path.join(scratch, 'innocent');
symlinkSync(dataDir, linkToData);
const linkToCode = path.join(scratch, 'tools');
symlinkSync(path.join(repo, 'node_modules'), linkToCode);
const danglingLink = path.join(outside, 'dangling.log');
symlinkSync(path.join(dataDir, 'not-yet.log'), danglingLink);

describe('audit devices that would turn the audit file into code (CVE-2025-6000 / HCSEC-2025-14)', () => {
  let s: SecretsHarness;
  beforeAll(async () => {
    s = await startSecrets();
  });
  afterAll(async () => {
    await s.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  const enable = (name: string, options: Record<string, string>, token = s.rootToken) =>
    s.call('PUT', `/v1/sys/audit/${name}`, {
      token,
      body: { type: 'file', options },
    });
  const enabledDevices = async () =>
    Object.keys((await s.call('GET', '/v1/sys/audit', { token: s.rootToken })).body.data).sort();

  /** The refusal a sudo (root) caller gets: 400 naming `field`, the device list unchanged, no file at `file`. */
  async function refused(name: string, options: Record<string, string>, field: RegExp, file?: string) {
    const reply = await enable(name, options);
    expect(reply.status, JSON.stringify(options)).toBe(400);
    expect(reply.body.errors.join(' '), JSON.stringify(options)).toMatch(field);
    expect(await enabledDevices()).toEqual(['harness/']);
    if (file) expect(existsSync(file), file).toBe(false);
  }

  it('root cannot give an audit file an execute bit: 400 naming "mode"', async () => {
    for (const mode of ['0755', '0700', '0710', '0601', '0777', '755', '0100']) {
      const file = path.join(outside, `exec-${mode}.log`);
      await refused('exec', { file_path: file, mode }, /"mode" must not be executable/, file);
    }
    // Set-id and sticky bits are no file mode a device takes either.
    await refused(
      'setuid',
      { file_path: path.join(outside, 'setuid.log'), mode: '4644' },
      /"mode" must be an octal file mode/,
    );
  });

  it('root cannot set a "prefix" unless the operator allowed prefixing (KEYHAVEN_ALLOW_AUDIT_LOG_PREFIXING)', async () => {
    const file = path.join(outside, 'prefixed.log');
    await refused(
      'prefixed',
      { file_path: file, prefix: '#!/bin/sh\n' },
      /"prefix" is not allowed.*KEYHAVEN_ALLOW_AUDIT_LOG_PREFIXING=true/,
      file,
    );
    await refused('prefixed', { file_path: 'stdout', prefix: '' }, /"prefix" is not allowed/);
  });

  it('root cannot write an audit file inside the data directory, however the path is spelled', async () => {
    const spellings = [
      path.join(dataDir, 'audit.log'),
      path.join(dataDir, 'dynamodb', 'hooks.log'),
      dataDir, // the directory itself
      `${outside}/../data/audit.log`, // `..` back into it
      `${outside}/./../../${path.basename(scratch)}/data/x.log`,
      path.join(linkToData, 'audit.log'), // a symlinked directory that leads into it
      `${dataDir}//audit.log`,
    ];
    for (const file_path of spellings) {
      await refused('data', { file_path }, /"file_path" must not be inside the data directory or the code/);
    }
    expect(existsSync(path.join(dataDir, 'audit.log'))).toBe(false);
    expect(existsSync(path.join(dataDir, 'x.log'))).toBe(false);
  });

  it('root cannot write an audit file into the code: the repository, node_modules, git hooks', async () => {
    const spellings = [
      path.join(repo, 'packages/core/src/audit.ts'),
      path.join(repo, 'node_modules/.bin/tsx-audit'),
      path.join(repo, '.git/hooks/post-checkout'),
      path.join(repo, 'package.json'),
      path.join(linkToCode, 'zod/index.js'), // a symlink from elsewhere into node_modules
    ];
    for (const file_path of spellings) {
      await refused('code', { file_path }, /"file_path" must not be inside the data directory or the code/);
    }
    expect(existsSync(path.join(repo, 'node_modules/.bin/tsx-audit'))).toBe(false);
    expect(existsSync(path.join(repo, '.git/hooks/post-checkout'))).toBe(false);
  });

  it('root cannot give a relative path, nor a symlink at the file name itself', async () => {
    for (const file_path of [
      'audit.log',
      './audit.log',
      '../.keyhaven/audit.log',
      '.keyhaven/audit.log',
      '~/audit.log',
    ]) {
      await refused('relative', { file_path }, /"file_path" must be an absolute path/);
    }
    expect(existsSync(path.join(repo, 'audit.log'))).toBe(false);
    // A dangling symlink outside, pointing into the data directory: refused, nothing created at its target.
    await refused(
      'dangling',
      { file_path: danglingLink },
      /"file_path"|symbolic link/,
      path.join(dataDir, 'not-yet.log'),
    );
  });

  it('a narrow token allowed to update sys/audit/* but without sudo cannot enable any device (403), nothing written', async () => {
    const policy =
      'path "sys/audit/*" { capabilities = ["create", "update", "read"] }\npath "sys/audit" { capabilities = ["read"] }';
    expect(
      (
        await s.call('PUT', '/v1/sys/policies/acl/audit-narrow', {
          token: s.rootToken,
          body: { policy },
        })
      ).status,
    ).toBe(204);
    const created = await s.call('POST', '/v1/auth/token/create', {
      token: s.rootToken,
      body: { policies: ['audit-narrow'] },
    });
    const narrow: string = created.body.auth.client_token;
    const file = path.join(outside, 'narrow.log');
    const reply = await enable('narrow', { file_path: file }, narrow);
    expect(reply.status).toBe(403);
    expect(await enabledDevices()).toEqual(['harness/']);
    expect(existsSync(file)).toBe(false);
    // Listing the devices is a sudo path too.
    expect((await s.call('GET', '/v1/sys/audit', { token: narrow })).status).toBe(403);
  });

  it('a table writer who edits a stored device into an executable file in the data directory gets nothing written there', async () => {
    const dir = path.join(outside, 'table-writer');
    mkdirSync(dir);
    expect((await enable('victim', { file_path: path.join(dir, 'victim.log') })).status).toBe(204);
    const planted = path.join(dataDir, 'planted.sh');
    await s.client.send(
      new UpdateItemCommand({
        TableName: s.tableName,
        Key: { pk: { S: 'sys' }, sk: { S: 'audit/victim/' } },
        UpdateExpression: 'SET #options = :options',
        ExpressionAttributeNames: { '#options': 'options' },
        ExpressionAttributeValues: { ':options': { M: { file_path: { S: planted }, mode: { S: '0755' } } } },
      }),
    );
    s.clock.advance(60); // past the devices' cache: the tampered device is opened again, and checked again
    const before = s.auditLines().length;
    // The harness device still records the request (one working device is enough); the tampered one writes nothing.
    expect((await s.call('PUT', '/v1/secret/after-tamper', { token: s.rootToken, body: { value: 'v' } })).status).toBe(
      204,
    );
    expect(s.auditLines().length).toBeGreaterThan(before);
    expect(existsSync(planted)).toBe(false);
    expect((await s.call('DELETE', '/v1/sys/audit/victim', { token: s.rootToken })).status).toBe(204);
  });

  it('what stays allowed: an absolute path outside both with mode 0640 (or 0600), discard (and stdout)', async () => {
    const file = path.join(outside, 'ok.log');
    expect((await enable('ok', { file_path: file, mode: '0640' })).status).toBe(204);
    expect((await enable('out', { file_path: 'discard' })).status).toBe(204);
    expect(
      (
        await s.call('PUT', '/v1/secret/probe', {
          token: s.rootToken,
          body: { value: 'v' },
        })
      ).status,
    ).toBe(204);
    expect(statSync(file).mode & 0o777).toBe(0o640);
    expect(readFileSync(file, 'utf8').split('\n')[0]).toMatch(/^\{"time"/); // a JSON line, no prefix
    for (const name of ['ok', 'out']) await s.call('DELETE', `/v1/sys/audit/${name}`, { token: s.rootToken });
    expect(await enabledDevices()).toEqual(['harness/']);
  });
});

describe('with the operator opt-in KEYHAVEN_ALLOW_AUDIT_LOG_PREFIXING=true (Vault: allow_audit_log_prefixing)', () => {
  let s: SecretsHarness;
  beforeAll(async () => {
    process.env.KEYHAVEN_ALLOW_AUDIT_LOG_PREFIXING = 'true';
    try {
      s = await startSecrets({ audit: false });
    } finally {
      delete process.env.KEYHAVEN_ALLOW_AUDIT_LOG_PREFIXING;
    }
  });
  afterAll(() => s.close());

  it('root may set a prefix; the execute-bit and data-directory refusals still hold', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'keyhaven-attack-prefix-'));
    try {
      const file = path.join(dir, 'prefixed.log');
      const options = { file_path: file, prefix: 'KH ' };
      expect(
        (
          await s.call('PUT', '/v1/sys/audit/prefixed', {
            token: s.rootToken,
            body: { type: 'file', options },
          })
        ).status,
      ).toBe(204);
      expect(readFileSync(file, 'utf8').startsWith('KH {')).toBe(true);
      const executable = await s.call('PUT', '/v1/sys/audit/exec', {
        token: s.rootToken,
        body: {
          type: 'file',
          options: {
            file_path: path.join(dir, 'x.sh'),
            prefix: '#!/bin/sh\n',
            mode: '0755',
          },
        },
      });
      expect(executable.status).toBe(400);
      expect(executable.body.errors[0]).toMatch(/"mode" must not be executable/);
      expect(existsSync(path.join(dir, 'x.sh'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
