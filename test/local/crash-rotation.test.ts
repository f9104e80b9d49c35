import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { watch } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { freePort, START_TIMEOUT_MS, start } from '../support/npm-start.ts';
import { peopleDn, type Slapd, serviceAccountsDn, startSlapd } from '../support/slapd.ts';
import { callerOf, configureDirectory } from '../support/crash-directory.ts';

/**
 * `kill -9` during directory rotations, check-outs and check-ins, then a restart on the same data: every password
 * a read answers (`static-cred`, a check-out) must bind on the real slapd at the moment it is answered.
 *
 * The child runs what `npm start` runs (`node --import tsx packages/local/src/main.ts`) on free ports with its own
 * data directory (its sealing key) and root token; its table lives in the test run's DynamoDB Local, which stands
 * for the managed table and is not what is killed. Kill times are random from a fixed seed (`CRASH_SEED`).
 */

const BUDGET_MS = 50_000;
const MAX_ROUNDS = 30;
const roles = ['alice', 'bob', 'carol', 'dave'];
const accounts = ['svc-1', 'svc-2', 'svc-3', 'svc-4'];
const roleDn = (name: string) => `cn=${name},${peopleDn}`;
const accountDn = (name: string) => `cn=${name},${serviceAccountsDn}`;

/** A small seeded generator (mulberry32): the same seed gives the same kill schedule. */
function seeded(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (below: number) => Math.floor(next() * below),
    pick: <T>(list: T[]) => list[Math.floor(next() * list.length)] as T,
  };
}

interface Child {
  process: ChildProcess;
  base: string;
  exited: Promise<void>;
}

const started = new Set<ChildProcess>();

async function startChild(env: Record<string, string>): Promise<Child> {
  const child = await start(env);
  started.add(child.child);
  return { process: child.child, base: child.secrets, exited: child.exited.then(() => undefined) };
}

async function kill9(child: Child): Promise<void> {
  if (child.process.pid) process.kill(-child.process.pid, 'SIGKILL');
  await child.exited;
  started.delete(child.process);
}

/**
 * Resolves when slapd's log shows a completed modify (`RESULT tag=103`) written after this call: the moment a
 * directory change has landed and the service is about to record it. Gives up after `limitMs`.
 */
async function nextModify(logFile: string, limitMs: number): Promise<boolean> {
  const file = await open(logFile, 'r');
  let offset = (await file.stat()).size;
  let pending = '';
  try {
    return await new Promise<boolean>((resolve) => {
      const check = async () => {
        const { bytesRead, buffer } = await file.read({ buffer: Buffer.alloc(65536), position: offset });
        offset += bytesRead;
        pending += buffer.subarray(0, bytesRead).toString();
        if (/RESULT tag=103 err=0/.test(pending)) finish(true);
        pending = pending.slice(-200);
      };
      const watcher = watch(logFile, () => void check());
      const poll = setInterval(() => void check(), 5);
      const limit = setTimeout(() => finish(false), limitMs);
      function finish(seen: boolean) {
        watcher.close();
        clearInterval(poll);
        clearTimeout(limit);
        resolve(seen);
      }
    });
  } finally {
    await file.close();
  }
}

describe('kill -9 during directory rotations and check-ins (npm start, real slapd)', () => {
  let slapd: Slapd;
  let dataDir: string;
  let env: Record<string, string>;
  let child: Child;
  const rootToken = `crash-root-${randomUUID()}`;
  const table = `crash-rotation-${randomUUID().slice(0, 8)}`;

  const call = callerOf(() => child.base, rootToken);

  beforeAll(async () => {
    slapd = await startSlapd();
    dataDir = await mkdtemp(path.join(tmpdir(), 'keyhaven-crash-'));
    env = {
      KEYHAVEN_DATA_DIR: dataDir,
      KEYHAVEN_SECRETS_PORT: String(await freePort()),
      KEYHAVEN_SCHEDULER_PORT: String(await freePort()),
      KEYHAVEN_DEV_ROOT_TOKEN: rootToken,
      KEYHAVEN_DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
      KEYHAVEN_TABLE: table,
    };
    child = await startChild(env);
  }, START_TIMEOUT_MS + 30_000);

  afterAll(async () => {
    for (const process_ of started) {
      try {
        if (process_.pid) process.kill(-process_.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await slapd?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('never answers a password that does not bind', { timeout: 240_000 }, async () => {
    await configureDirectory(call, slapd, { roles, accounts });

    const seed = Number(process.env.CRASH_SEED ?? 20261124);
    const random = seeded(seed);
    const figures = {
      rounds: 0,
      kills: 0,
      killsAfterModify: 0,
      killedInFlight: 0,
      reads: 0,
      passwordsChecked: 0,
      writeAheadsFound: 0,
      status: {} as Record<string, number>,
    };
    const dead: string[] = [];
    const note = (status: number) => {
      figures.status[status] = (figures.status[status] ?? 0) + 1;
    };
    /** A read's answer, checked against the directory as soon as it arrives. */
    const mustBind = async (what: string, dn: string, password: string) => {
      figures.passwordsChecked++;
      if (!(await slapd.canBind(dn, password))) dead.push(`${what} (round ${figures.rounds})`);
    };
    const readRole = async (role: string) => {
      const reply = await call('GET', `ldap/static-cred/${role}`);
      note(reply.status);
      figures.reads++;
      if (reply.status === 200) await mustBind(`static-cred/${role}`, roleDn(role), reply.body.data.password);
      return reply;
    };
    const checkOut = async () => {
      const reply = await call('POST', 'ldap/library/pool/check-out');
      note(reply.status);
      if (reply.status === 200) {
        figures.reads++;
        await mustBind(
          `check-out of ${reply.body.data.service_account_name}`,
          accountDn(reply.body.data.service_account_name),
          reply.body.data.password,
        );
      }
      return reply;
    };
    const checkIn = async (account: string) => {
      const reply = await call('POST', 'ldap/library/manage/pool/check-in', { service_account_names: [account] });
      note(reply.status);
      return reply;
    };
    const outNow = async () => {
      const status = await call('GET', 'ldap/library/pool/status');
      return accounts.filter((account) => status.body.data[account]?.available === false);
    };
    const documents = DynamoDBDocumentClient.from(new DynamoDBClient(localClientConfig(inject('dynamoEndpoint'))));
    const writeAheadKeys = async () =>
      (
        (
          await documents.send(
            new ScanCommand({
              TableName: table,
              FilterExpression: 'attribute_exists(pending)',
              ProjectionExpression: 'sk',
            }),
          )
        ).Items ?? []
      ).map((item) => String(item.sk));
    const writeAheads = async () => (await writeAheadKeys()).length;
    const scanStrings = async (FilterExpression: string, attribute: string, values?: Record<string, string>) =>
      (
        (
          await documents.send(
            new ScanCommand({
              TableName: table,
              FilterExpression,
              ProjectionExpression: attribute,
              ExpressionAttributeValues: values,
            }),
          )
        ).Items ?? []
      )
        .map((item) => String(item[attribute]))
        .sort();
    // The framework's write-ahead records (`wal/` items) and the ones the account items name: each change puts its
    // record with the item's write-ahead and drops it with the outcome, so after any kill the two are the same.
    const walRecords = () => scanStrings('begins_with(sk, :wal)', 'sk', { ':wal': 'wal/' });
    const walsNamed = () => scanStrings('attribute_exists(pendingWal)', 'pendingWal');
    // Compared once the killed child's last requests have landed: DynamoDB Local may still apply a transaction the
    // child sent just before the kill, and a Scan is not isolated from a transaction, so two scans taken while one
    // lands can each see a different side of it. Every change is one transaction, so the two settle equal; a change
    // that left them apart would never settle, and fails here after 5 s.
    const walsAgree = async () => {
      const deadline = Date.now() + 5_000;
      for (;;) {
        const [records, named] = [await walRecords(), await walsNamed()];
        if (JSON.stringify(records) === JSON.stringify(named) || Date.now() > deadline) {
          expect(records).toEqual(named);
          return;
        }
        await sleep(100);
      }
    };

    const began = Date.now();
    while (figures.rounds < MAX_ROUNDS && (Date.now() - began < BUDGET_MS || figures.rounds < 5)) {
      figures.rounds++;
      // A batch of concurrent operations; reads only of roles this batch does not rotate (a read racing a rotation
      // of the same role may rightly answer the password of a moment before).
      const out = await outNow();
      const rotating = roles.filter(() => random.next() < 0.5);
      // Every batch changes at least one password, so a kill can land inside a change.
      if (rotating.length === 0) rotating.push(random.pick(roles));
      const operations: Array<Promise<unknown>> = [];
      let settled = 0;
      const track = (operation: Promise<unknown>) =>
        operations.push(
          operation.then(
            () => settled++,
            () => undefined,
          ),
        );
      for (const role of rotating) track(call('POST', `ldap/rotate-role/${role}`).then((reply) => note(reply.status)));
      if (random.next() < 0.25) track(call('POST', 'ldap/rotate-root').then((reply) => note(reply.status)));
      for (const account of out) if (random.next() < 0.6) track(checkIn(account));
      for (let index = random.int(3); index > 0; index--) track(checkOut());
      for (const role of roles) if (!rotating.includes(role)) track(readRole(role));
      // Half the kills land just after the directory took a change (before the service can record it), half at
      // a random moment of the batch.
      if (random.next() < 0.5) {
        const modified = nextModify(slapd.logFile, 3000);
        if (await modified) figures.killsAfterModify++;
        await sleep(random.int(4));
      } else {
        await sleep(random.int(400));
      }
      await kill9(child);
      figures.kills++;
      await Promise.allSettled(operations);
      figures.killedInFlight += operations.length - settled;

      figures.writeAheadsFound += await writeAheads();
      await walsAgree();
      child = await startChild(env);
      // Right after the restart: every role's password, whatever the kill left behind.
      for (const role of roles) {
        const reply = await readRole(role);
        expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      }
    }

    // Bring every account back and lend each once more: each password handed out binds.
    for (const account of await outNow()) expect((await checkIn(account)).status).toBe(200);
    const lent: string[] = [];
    for (const _ of accounts) {
      const reply = await checkOut();
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      lent.push(reply.body.data.service_account_name);
    }
    expect(lent.sort()).toEqual([...accounts].sort());
    for (const account of lent) expect((await checkIn(account)).status).toBe(200);
    // A rotation finishes whatever write-ahead a kill left on a role, without waiting for its window. (A root
    // write-ahead the directory never took waits out its window: the engine cannot adopt its own bind password.)
    for (const role of roles) expect((await call('POST', `ldap/rotate-role/${role}`)).status).toBe(204);
    for (const role of roles) expect((await readRole(role)).status).toBe(200);
    expect((await writeAheadKeys()).filter((key) => key !== 'config')).toEqual([]);
    await walsAgree();

    console.log(
      `crash-rotation (seed ${seed}): ${figures.kills} kills in ${figures.rounds} rounds (${figures.killsAfterModify} right after a directory modify), ${figures.killedInFlight} requests cut off, ` +
        `${figures.writeAheadsFound} write-aheads found after the kills (summed over rounds), ${figures.reads} reads, ${figures.passwordsChecked} passwords checked, ` +
        `${dead.length} dead; statuses ${JSON.stringify(figures.status)}`,
    );
    expect(dead).toEqual([]);
    expect(figures.status['500'] ?? 0).toBe(0);
    expect(figures.kills).toBeGreaterThanOrEqual(5);
  });
});
