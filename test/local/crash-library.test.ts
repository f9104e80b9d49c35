import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { claimSeconds } from '../../packages/core/src/secrets/engines/ldap/library-model.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { freePort, killLeftovers, launch, START_TIMEOUT_MS } from '../support/npm-start.ts';
import { type Slapd, serviceAccountsDn, startSlapd } from '../support/slapd.ts';
import { callerOf, configureDirectory, type Reply } from '../support/crash-directory.ts';

/**
 * Issue 24: kill -9 between every pair of writes of a library check-out and of a check-in, then restart on the same
 * table: after the restart and the jobs' next rounds, every account of the set is either available, with a password
 * that binds on the real slapd, or out under a lease that exists (and its borrower can check it in). Nothing stranded.
 *
 * The child (crash-library-child.ts) runs what `npm start` runs on the run's DynamoDB Local, and kills itself with
 * SIGKILL right after the Nth write to the table lands (N = 1, 2, … until the operation completes with no kill), so
 * every gap between two writes is a kill point. Each restart moves the child's clock past a claim's deadline.
 */

const accounts = ['svc-1', 'svc-2', 'svc-3'];
const accountDn = (name: string) => `cn=${name},${serviceAccountsDn}`;

interface Child {
  process: ChildProcess;
  base: string;
  output: () => string;
  exited: Promise<NodeJS.Signals | null>;
}

describe('kill -9 between every two writes of a library check-out and check-in (npm start runtime, real slapd)', () => {
  let slapd: Slapd;
  let dataDir: string;
  let controlFile: string;
  let env: Record<string, string>;
  let child: Child;
  let offsetSeconds = 0;
  const rootToken = `crash-root-${randomUUID()}`;
  const table = `crash-library-${randomUUID().slice(0, 8)}`;

  async function startChild(): Promise<Child> {
    const launched = launch(
      { ...env, CRASH_CLOCK_OFFSET_SECONDS: String(offsetSeconds) },
      'test/local/crash-library-child.ts',
    );
    const exited = launched.exited.then(({ signal }) => signal);
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const ready = /ready (\S+)/.exec(launched.stdout());
      if (ready) return { process: launched.child, base: ready[1] as string, output: launched.stdout, exited };
      if (launched.child.exitCode !== null || launched.child.signalCode !== null || Date.now() > deadline) {
        throw new Error(`the child did not start:\n${launched.stdout()}\n${launched.stderr()}`);
      }
      await sleep(50);
    }
  }

  const call = callerOf(() => child.base, rootToken);

  const documents = () => DynamoDBDocumentClient.from(new DynamoDBClient(localClientConfig(inject('dynamoEndpoint'))));
  /** The library account items as stored (their check-out fields are not sealed). */
  const accountItems = async () => {
    const items = (
      await documents().send(
        new ScanCommand({
          TableName: table,
          FilterExpression: 'begins_with(sk, :prefix)',
          ExpressionAttributeValues: { ':prefix': 'library-account/' },
        }),
      )
    ).Items as Array<Record<string, unknown>>;
    return new Map(items.map((item) => [String(item.sk).slice('library-account/'.length), item]));
  };

  beforeAll(async () => {
    slapd = await startSlapd();
    dataDir = await mkdtemp(path.join(tmpdir(), 'keyhaven-crash-library-'));
    controlFile = path.join(dataDir, 'kill-after');
    env = {
      KEYHAVEN_DATA_DIR: dataDir,
      KEYHAVEN_SECRETS_PORT: String(await freePort()),
      KEYHAVEN_SCHEDULER_PORT: String(await freePort()),
      KEYHAVEN_DEV_ROOT_TOKEN: rootToken,
      KEYHAVEN_DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
      KEYHAVEN_TABLE: table,
      CRASH_CONTROL_FILE: controlFile,
    };
    child = await startChild();
  }, START_TIMEOUT_MS + 30_000);

  afterAll(async () => {
    killLeftovers();
    await slapd?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('leaves every account available with a binding password, or held by a live lease, whichever write the kill follows', {
    timeout: 420_000,
  }, async () => {
    await configureDirectory(call, slapd, { roles: [], accounts });
    // The borrower: a token that may only use the library.
    await call('POST', 'sys/policies/acl/borrower', {
      policy: 'path "ldap/library/*" { capabilities = ["read", "update"] }',
    });
    const borrower = (await call('POST', 'auth/token/create', { policies: ['borrower'], ttl: '24h' })).body.auth
      .client_token as string;

    const report: string[] = [];

    /** Arms the child to kill itself after `n` more writes, and runs `operation`: the reply, or undefined if killed. */
    const armed = async (n: number, operation: () => Promise<Reply>): Promise<Reply | undefined> => {
      await writeFile(controlFile, String(n));
      const before = child.output().length;
      child.process.kill('SIGUSR2');
      while (!child.output().slice(before).includes(`armed: kill after write ${n}`)) await sleep(10);
      const outcome = await Promise.race([operation().catch(() => undefined), child.exited.then(() => undefined)]);
      // A kill lands before the answer is sent; the answer of a completed operation comes after its last write.
      const killed =
        child.process.signalCode === 'SIGKILL' || (outcome === undefined && (await child.exited) === 'SIGKILL');
      const writes = [
        ...child
          .output()
          .slice(before)
          .matchAll(/^write \d+: .*$/gm),
      ].map((match) => match[0]);
      if (killed) {
        await child.exited;
        report.push(`killed after ${writes.at(-1)}`);
        return undefined;
      }
      // Disarm: the writes so far are the whole operation.
      await writeFile(controlFile, '0');
      child.process.kill('SIGUSR2');
      report.push(
        `completed in ${writes.length} writes: ${writes.map((line) => line.replace(/^write \d+: /, '')).join(' ; ')}`,
      );
      return outcome;
    };

    /**
     * After a restart: within a few rounds of the jobs, every account is available or held by a lease that exists;
     * then each available one is lent once (its password must bind) and everything is brought back.
     */
    const restartAndCheck = async (what: string) => {
      offsetSeconds += claimSeconds + 10;
      child = await startChild();
      const stranded: string[] = [];
      const settleBy = Date.now() + 20_000;
      for (;;) {
        stranded.length = 0;
        for (const [name, item] of await accountItems()) {
          if (item.available === true) continue;
          const lease = await call('PUT', 'sys/leases/lookup', { lease_id: item.leaseId });
          if (lease.status !== 200 || !(lease.body.data.ttl > 0))
            stranded.push(`${name} (lease ${String(item.leaseId)}: ${lease.status})`);
        }
        if (stranded.length === 0 || Date.now() > settleBy) break;
        await sleep(200);
      }
      expect(stranded, `after a kill ${what}`).toEqual([]);
      // Whatever the borrower still holds, the borrower can check in (acknowledged once).
      for (const [name, item] of await accountItems()) {
        if (item.available === true) continue;
        const back = await call('POST', 'ldap/library/pool/check-in', { service_account_names: [name] }, borrower);
        expect(
          { status: back.status, check_ins: back.body.data?.check_ins },
          `${what}: ${JSON.stringify(back.body)}`,
        ).toEqual({ status: 200, check_ins: [name] });
      }
      // Every account lends, with a password that binds now.
      const lent: Reply[] = [];
      for (const _ of accounts) lent.push(await call('POST', 'ldap/library/pool/check-out'));
      expect(
        lent.map((reply) => reply.status),
        what,
      ).toEqual(accounts.map(() => 200));
      for (const reply of lent) {
        expect(
          await slapd.canBind(accountDn(reply.body.data.service_account_name), reply.body.data.password),
          `${what}: ${reply.body.data.service_account_name}`,
        ).toBe(true);
      }
      const back = await call('POST', 'ldap/library/manage/pool/check-in', { service_account_names: accounts });
      expect(back.body.data.check_ins.sort(), what).toEqual([...accounts].sort());
    };

    // Check-out: kill after write 1, 2, … until a check-out completes.
    let checkOutKills = 0;
    for (let n = 1; ; n++) {
      const reply = await armed(n, () => call('POST', 'ldap/library/pool/check-out', {}, borrower));
      if (reply) {
        expect(reply.status).toBe(200);
        expect(await slapd.canBind(accountDn(reply.body.data.service_account_name), reply.body.data.password)).toBe(
          true,
        );
        expect(
          (await call('POST', 'ldap/library/manage/pool/check-in', { service_account_names: accounts })).status,
        ).toBe(200);
        break;
      }
      checkOutKills++;
      await restartAndCheck(`after write ${n} of a check-out`);
    }

    // Check-in by the borrower: kill after write 1, 2, … until a check-in completes.
    let checkInKills = 0;
    for (let n = 1; ; n++) {
      const out = await call('POST', 'ldap/library/pool/check-out', {}, borrower);
      expect(out.status).toBe(200);
      const account = out.body.data.service_account_name as string;
      const reply = await armed(n, () =>
        call('POST', 'ldap/library/pool/check-in', { service_account_names: [account] }, borrower),
      );
      if (reply) {
        expect(reply.body.data.check_ins).toEqual([account]);
        expect(await slapd.canBind(accountDn(account), out.body.data.password)).toBe(false);
        break;
      }
      checkInKills++;
      await restartAndCheck(`after write ${n} of a check-in`);
      // The password the kill interrupted the return of no longer binds, or the account is still out to its borrower
      // (then it was just checked in above, which changed it).
      expect(await slapd.canBind(accountDn(account), out.body.data.password)).toBe(false);
    }

    console.log(
      `crash-library: ${checkOutKills} kills during check-outs, ${checkInKills} during check-ins\n  ${report.join('\n  ')}`,
    );
    // Each operation is more than one write, so there were kill points between writes of both.
    expect(checkOutKills).toBeGreaterThanOrEqual(1);
    expect(checkInKills).toBeGreaterThanOrEqual(2);
  });
});
