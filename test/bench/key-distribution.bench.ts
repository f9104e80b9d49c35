/**
 * Key distribution: over a mixed workload of 100,000 operations (OPS=n), the share of writes the busiest partition
 * key of each kind takes, with today's sharded keys and with the keys before sharding, and the workload rate at
 * which that key reaches DynamoDB's ~1,000 writes/s per partition key.
 *
 * No DynamoDB: each operation's writes are listed by hand from the code (LeaseManager.register/renew/claim/forget,
 * TokenStore.create, SchedulerState.commit) and their keys computed with the real key functions (`leasePk`,
 * `leaseQueueShard`, `tokenQueue`, `shardKey`, `inServiceCheck`, the scheduler's `META_PK`/`EVENT_PK`). A login's
 * in-service check is a ConditionCheck, not a write, but it is listed: DynamoDB cancels concurrent transactions
 * that touch one item (TransactionConflict), so the item every login checks caps an auth method's logins. A base-table write and the
 * due index's write of the same item both count, each on its own partition key (the index throttles its table).
 *
 * The mix (per 100 operations): 25 leased kv reads (lease, its queue, the owning token's ref), 10 lease renewals,
 * 25 lease revocations by the sweep (claim, then delete and tombstone in one transaction, the token's ref),
 * 15 service-token JWT logins (token, accessor, the auth mount's issued index, the expiry queue), 5 expired
 * service tokens swept, 20 scheduler writes (a role or binding rule, the index counter, the table index, the
 * event). Leases come from 5 kv roles, tokens from 1,000 callers of one auth mount.
 * Run: `npx tsx test/bench/key-distribution.bench.ts` (BENCH_SMOKE=1: 2,000 operations).
 */
import { randomBytes } from 'node:crypto';
import { EVENT_PK, META_PK } from '../../packages/core/src/scheduler/state.ts';
import { leasePk, leaseQueue, leaseQueueShard } from '../../packages/core/src/secrets/leases/lease-manager.ts';
import { inServiceCheck } from '../../packages/core/src/secrets/mounts/mount-table.ts';
import { issuedPk, tokenQueue } from '../../packages/core/src/secrets/tokens/token-store.ts';
import { shardKey } from '../../packages/core/src/storage/due.ts';
import { figure, sized } from './summary.ts';

const operations = sized('OPS', 100_000, 2_000);
type Kind =
  | 'leases'
  | 'lease tombstones'
  | 'due queues (index)'
  | 'token records'
  | 'auth mount issued index'
  | 'login in-service check'
  | 'scheduler index';
type Write = [Kind, string];

interface Scheme {
  lease: (id: string) => string;
  leaseQueue: (id: string) => string;
  tombstone: (id: string) => string;
  tombstoneQueue: (id: string) => string;
  tokenQueue: (hash: string) => string;
  issued: (hash: string) => string;
  /** The item a login's transaction checks to know its auth method is in service (a ConditionCheck, not a write). */
  inService: (hash: string) => string;
}
const sharded: Scheme = {
  lease: leasePk,
  leaseQueue: (id) => leaseQueueShard('kv', id),
  tombstone: (id) => shardKey('revoked-leases', id),
  tombstoneQueue: (id) => shardKey('tombstones', id),
  tokenQueue,
  issued: (hash) => issuedPk({ uuid: 'jwt-mount-uuid' } as Parameters<typeof issuedPk>[0], hash),
  inService: (hash) =>
    (inServiceCheck({ path: 'auth/jwt/', uuid: 'jwt-mount-uuid' }, hash) as { check: { pk: string } }).check.pk,
};
const unsharded: Scheme = {
  lease: () => 'leases',
  leaseQueue: () => leaseQueue('kv'),
  tombstone: () => 'revoked-leases',
  tombstoneQueue: () => 'tombstones',
  tokenQueue: () => 'expiry',
  issued: () => 'issued#jwt-mount-uuid',
  inService: () => 'mounts',
};

const hex = () => randomBytes(16).toString('hex');
const callers = Array.from({ length: 1000 }, hex);
const roles = ['app/db', 'app/cache', 'ci/deploy', 'ops/key', 'web/session'];
const base62 = () => randomBytes(18).toString('base64url');
const pick = <T>(list: T[]) => list[Math.floor(Math.random() * list.length)] as T;

function workload(scheme: Scheme): Write[] {
  const writes: Write[] = [];
  const live: string[] = [];
  const liveTokens: string[] = [];
  for (let op = 0; op < operations; op++) {
    const slot = op % 100;
    if (slot < 25) {
      const id = `secret/${pick(roles)}/${base62()}`;
      live.push(id);
      const owner = pick(callers);
      writes.push(
        ['leases', scheme.lease(id)],
        ['due queues (index)', scheme.leaseQueue(id)],
        ['token records', `token#${owner}`],
      );
    } else if (slot < 35) {
      const id = pick(live);
      writes.push(['leases', scheme.lease(id)], ['due queues (index)', scheme.leaseQueue(id)]);
    } else if (slot < 60) {
      const id =
        live.length > 0
          ? (live.splice(Math.floor(Math.random() * live.length), 1)[0] as string)
          : `secret/app/db/${base62()}`;
      writes.push(
        ['leases', scheme.lease(id)], // claim
        ['due queues (index)', scheme.leaseQueue(id)],
        ['leases', scheme.lease(id)], // delete
        ['due queues (index)', scheme.leaseQueue(id)],
        ['lease tombstones', scheme.tombstone(id)],
        ['due queues (index)', scheme.tombstoneQueue(id)],
        ['token records', `token#${pick(callers)}`],
      );
    } else if (slot < 75) {
      const hash = hex();
      liveTokens.push(hash);
      writes.push(
        ['token records', `token#${hash}`],
        ['due queues (index)', scheme.tokenQueue(hash)],
        ['token records', `accessor#${hex()}`],
        ['auth mount issued index', scheme.issued(hash)],
        ['login in-service check', scheme.inService(hash)],
      );
    } else if (slot < 80) {
      const hash = liveTokens.pop() ?? hex();
      writes.push(
        ['token records', `token#${hash}`],
        ['due queues (index)', scheme.tokenQueue(hash)],
        ['auth mount issued index', scheme.issued(hash)],
      );
    } else {
      writes.push(
        ['token records', `sched#acl_role#${hex()}`],
        ['scheduler index', `${META_PK}|index`],
        ['scheduler index', `${META_PK}|table`],
        ['scheduler index', EVENT_PK],
      );
    }
  }
  return writes;
}

/** DynamoDB's partition key is `pk`; the scheduler's counter and table indexes share `META_PK` (told apart above for the sort key only). */
const partitionOf = (kind: Kind, key: string) =>
  kind === 'scheduler index' && key.startsWith(META_PK) ? META_PK : key;

/** Prints the table; returns the lowest workload rate at which some key reaches 1,000 writes/s, and its kind. */
function report(title: string, scheme: Scheme): { ceiling: number; kind: Kind } {
  let lowest = { ceiling: Number.POSITIVE_INFINITY, kind: 'leases' as Kind };
  const writes = workload(scheme);
  const byKind = new Map<Kind, Map<string, number>>();
  for (const [kind, key] of writes) {
    const keys = byKind.get(kind) ?? new Map<string, number>();
    const partition = partitionOf(kind, key);
    keys.set(partition, (keys.get(partition) ?? 0) + 1);
    byKind.set(kind, keys);
  }
  console.log(
    `\n${title}: ${operations.toLocaleString('en')} operations, ${writes.length.toLocaleString('en')} writes (and logins' in-service checks)`,
  );
  console.log(
    'kind                        writes   keys  busiest key                     share of kind  share of all  workload ops/s at 1,000 w/s on it',
  );
  for (const [kind, keys] of byKind) {
    const total = [...keys.values()].reduce((a, b) => a + b, 0);
    const [busiest, count] = [...keys].sort((a, b) => b[1] - a[1])[0] as [string, number];
    const ceiling = (1000 * operations) / count;
    if (ceiling < lowest.ceiling) lowest = { ceiling, kind };
    console.log(
      `${kind.padEnd(26)} ${String(total).padStart(7)} ${String(keys.size).padStart(6)}  ${busiest.slice(0, 30).padEnd(30)} ${`${((100 * count) / total).toFixed(1)}%`.padStart(13)} ${`${((100 * count) / writes.length).toFixed(1)}%`.padStart(13)}  ${Math.round(ceiling).toLocaleString('en').padStart(12)}`,
    );
  }
  return lowest;
}

const before = report('Before sharding (one partition per kind)', unsharded);
const after = report('Sharded (16 shards by a hash of the id or token hash; scheduler index unchanged)', sharded);
figure(
  'key-distribution',
  'sharded: busiest partition key, workload ops/s at 1,000 w/s',
  Math.round(after.ceiling),
  '—',
  `${after.kind}; before sharding ${Math.round(before.ceiling)} (${before.kind})`,
);
