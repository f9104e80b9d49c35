import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { schedulerAuditFromEnvironment } from '../../packages/core/src/scheduler/audit.ts';
import { startScheduler } from '../support/scheduler-harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: audit entries are free-form JSON
const entries = (file: string): any[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line));

describe('scheduler audit log (Nomad Enterprise format)', () => {
  it('records writes and logins before and after they run, with the caller, and no reads', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'keyhaven-sched-audit-')), 'audit.log');
    const s = await startScheduler({ audit: { path: file } });
    const secret = await s.bootstrap();
    const bootstrap = {
      SecretID: secret,
      AccessorID: (await s.call('GET', '/v1/acl/token/self', { token: secret })).body.AccessorID as string,
    };
    const created = await s.call('POST', '/v1/acl/policy/readers', {
      token: bootstrap.SecretID,
      body: {
        Name: 'readers',
        Rules: 'namespace "default" { policy = "read" }',
      },
    });
    expect(created.status).toBe(200);
    expect((await s.call('GET', '/v1/acl/policies', { token: bootstrap.SecretID })).status).toBe(200);

    const lines = entries(file);
    const policyWrite = lines.filter((entry) => entry.payload.request.endpoint === '/v1/acl/policy/readers');
    expect(policyWrite.map((entry) => entry.payload.stage)).toEqual(['OperationReceived', 'OperationComplete']);
    const [received, complete] = policyWrite;
    expect(received).toMatchObject({
      event_type: 'audit',
      payload: {
        type: 'audit',
        version: 1,
        auth: {
          accessor_id: bootstrap.AccessorID,
          name: 'Bootstrap Token',
          global: true,
        },
        request: {
          operation: 'POST',
          namespace: { id: 'default' },
          request_meta: { remote_address: '127.0.0.1' },
        },
      },
    });
    expect(received.payload.id).toBe(complete.payload.id);
    expect(complete.payload.response).toEqual({ status_code: 200 });
    expect(lines.some((entry) => entry.payload.request.endpoint === '/v1/acl/policies')).toBe(false);
    // The management secret never appears; only its accessor.
    expect(readFileSync(file, 'utf8')).not.toContain(bootstrap.SecretID);

    const login = await s.call('POST', '/v1/acl/login', {
      body: { AuthMethodName: 'missing', LoginToken: 'x' },
    });
    const loginEntries = entries(file).filter((entry) => entry.payload.request.endpoint === '/v1/acl/login');
    expect(loginEntries.map((entry) => entry.payload.stage)).toEqual(['OperationReceived', 'OperationComplete']);
    expect(loginEntries[1].payload.response.status_code).toBe(login.status);
    expect(loginEntries[0].payload.auth).toBeNull();
  });

  it('enforced delivery refuses a write it cannot record; best-effort lets it through', async () => {
    const unwritable = '/nonexistent-dir/audit.log';
    const enforced = await startScheduler({ audit: { path: unwritable } });
    const refused = await enforced.call('POST', '/v1/acl/bootstrap');
    expect(refused.status).toBe(503);
    expect(refused.text).toMatch(/audit/);
    // Nothing ran: bootstrap is still available once the log can be written.
    const bestEffort = await startScheduler({
      audit: { path: unwritable, delivery: 'best-effort' },
      share: enforced,
    });
    expect((await bestEffort.call('POST', '/v1/acl/bootstrap')).status).toBe(200);
  });

  it('is switched on by KEYHAVEN_SCHEDULER_AUDIT, and refuses a delivery mode it does not know', () => {
    expect(schedulerAuditFromEnvironment({})).toBeUndefined();
    expect(schedulerAuditFromEnvironment({ KEYHAVEN_SCHEDULER_AUDIT: 'stdout' })).toEqual({
      path: 'stdout',
      delivery: 'enforced',
    });
    expect(() =>
      schedulerAuditFromEnvironment({
        KEYHAVEN_SCHEDULER_AUDIT: 'stdout',
        KEYHAVEN_SCHEDULER_AUDIT_DELIVERY: 'sometimes',
      }),
    ).toThrow(/enforced or best-effort/);
  });
});
