/**
 * Every kind of item the services write to the one table, with its protection against a table writer (storage is
 * untrusted: docs/security.md, "Every item kind and its protection"). The table there lists exactly these rows, and
 * `test/storage/item-kinds.test.ts` fails on a write whose key no row matches (so a new kind of item cannot be added
 * without deciding its protection) and on a `MAC` row's item written without its MAC. `functions/deploy/sign-items.ts`
 * signs the `MAC` rows' items written before their MAC existed.
 *
 * Protections:
 * - `MAC`: the item carries an HMAC over its kind, key and attributes (`storage/item-mac.ts`); a forged, edited or
 *   moved one is refused.
 * - `sealed`: what matters in it is AES-GCM sealed bound to its key (`Keyring.seal`), so it neither opens elsewhere
 *   nor can be written without the keyring.
 * - `link`: points at a `MAC` item, which must name the link back; a forged link finds nothing, a deleted one is a
 *   deletion (left open in security.md).
 * - `not security state`: nothing in it decides who gets what.
 * - `unprotected`: it is security state and is not yet MACed; `why` says what a forgery reaches and why it is left.
 */
import { authMethodKind } from './scheduler/acl/auth-methods/store.ts';
import { bindingRuleKind } from './scheduler/acl/binding-rules/store.ts';
import { oidcStateKind } from './scheduler/acl/oidc.ts';
import { policyKind as schedulerPolicyKind } from './scheduler/acl/policies/store.ts';
import { roleKind } from './scheduler/acl/roles/store.ts';
import { bootstrapMarkerKind, tokenKind as schedulerTokenKind } from './scheduler/acl/tokens/store.ts';
import { allocationKind, allocationLinkKind } from './scheduler/cluster/allocations/store.ts';
import { deploymentKind } from './scheduler/cluster/deployments/store.ts';
import { evaluationKind } from './scheduler/cluster/evaluations/store.ts';
import { jobKind, jobVersionKind } from './scheduler/cluster/jobs/store.ts';
import { namespaceKind } from './scheduler/cluster/namespaces/store.ts';
import { nodePoolKind } from './scheduler/cluster/node-pools/store.ts';
import { schedulerConfigKind } from './scheduler/cluster/scheduler-config/store.ts';
import { beatKind, nodeKind } from './scheduler/cluster/nodes/store.ts';
import { serviceKind } from './scheduler/cluster/services/store.ts';
import { auditDeviceKind } from './secrets/audit/audit-devices.ts';
import { authenticatedValueKind } from './secrets/mounts/mount-storage.ts';
import { mountKind } from './secrets/mounts/mount-table.ts';
import { allSecretsFamilies, backendsOf } from './secrets/families.ts';
import { passwordPolicyKind } from './secrets/policies/password-policy-store.ts';
import { policyKind } from './secrets/policies/policy-store.ts';
import { initMarkerKind } from './secrets/sys/init.ts';
import { tokenKind } from './secrets/tokens/token-store.ts';
import type { ItemKindRow } from './storage/item-kind-row.ts';
import { keyringKind } from './storage/keyring-item.ts';

export type { ItemKindRow, Protection } from './storage/item-kind-row.ts';

const shard = '#\\d{2}';
const anyMount = /^mount#[^#]+$/;
const row = (fields: ItemKindRow): ItemKindRow => fields;

export const itemKindRows: readonly ItemKindRow[] = [
  // The secrets service's system partitions.
  row({
    name: 'keyring',
    where: '`sys` / `keyring`',
    pk: /^sys$/,
    sk: /^keyring$/,
    protection: 'MAC',
    mac: keyringKind,
    why: "the wrapped data key (an AEAD under KMS or the key file), the initialisation stamp a deleted `sys/init` is caught by, and the initialisation's epoch every other secrets-service MAC binds",
  }),
  row({
    name: 'init marker',
    where: '`sys` / `init`',
    pk: /^sys$/,
    sk: /^init$/,
    protection: 'MAC',
    mac: initMarkerKind,
    why: 'its absence would offer initialisation again (never believed alone: the keyring is stamped too)',
  }),
  row({
    name: 'audit device',
    where: '`sys` / `audit/<path>`',
    pk: /^sys$/,
    sk: /^audit\//,
    protection: 'MAC',
    mac: auditDeviceKind,
    why: 'where the audit trail goes and whether it carries raw tokens',
  }),
  row({
    name: 'mount',
    where: '`mounts` / `<path>`',
    pk: /^mounts$/,
    sk: /./,
    protection: 'MAC',
    mac: mountKind,
    why: "which backend serves a path, with what options and tuning (a login's TTLs, listing visibility)",
  }),
  row({
    name: 'ACL policy',
    where: '`policies` / `acl/<name>`',
    pk: /^policies$/,
    sk: /^acl\//,
    protection: 'MAC',
    mac: policyKind,
    why: 'what a token may do',
  }),
  row({
    name: 'password policy',
    where: '`password-policies` / `<name>`',
    pk: /^password-policies$/,
    sk: /./,
    protection: 'MAC',
    mac: passwordPolicyKind,
    why: 'how guessable every password an engine generates is',
  }),
  row({
    name: 'token',
    where: '`token#<keyed hash>` / `token`',
    pk: /^token#/,
    sk: /^token$/,
    protection: 'MAC',
    mac: tokenKind,
    why: 'policies, TTL, type and parent of a token; use count, renewal time, the revoking flag and its queue place stay outside the MAC as bookkeeping',
  }),
  row({
    name: "token's children and leases",
    where: '`token#<keyed hash>` / `child#…`, `lease#…`',
    pk: /^token#/,
    sk: /^(child|lease)#/,
    protection: 'link',
    why: 'what revoking the token revokes with it; a forged entry revokes a token or lease too many (denial of service)',
  }),
  row({
    name: 'accessor',
    where: '`accessor#<accessor>` / `accessor`',
    pk: /^accessor#/,
    sk: /^accessor$/,
    protection: 'link',
    why: 'finds a token by accessor; the token must name the accessor back',
  }),
  row({
    name: 'issued-token index',
    where: '`issued#<mount>#<shard>` / `<path>…`',
    pk: new RegExp(`^issued#[^#]+${shard}$`),
    sk: /./,
    protection: 'link',
    why: 'the tokens a login mount issued, revoked when it is disabled; each token is read and verified',
  }),
  row({
    name: 'lease',
    where: '`leases#<shard>` / `<lease id>`',
    pk: new RegExp(`^leases(${shard})?$`),
    sk: /./,
    protection: 'not security state',
    why: 'when a secret is revoked: an edit delays or hastens a revocation (left open in security.md); the credentials it revokes are sealed',
  }),
  row({
    name: 'revoked lease',
    where: '`revoked-leases#<shard>` / `<lease id>`',
    pk: new RegExp(`^revoked-leases(${shard})?$`),
    sk: /./,
    protection: 'not security state',
    why: "a tombstone that keeps the table's stream from putting a revoked lease back",
  }),
  row({
    name: 'in-service marker',
    where: '`in-service#<mount>#<shard>` / `marker`',
    pk: new RegExp(`^in-service#[^#]+${shard}$`),
    sk: /^marker$/,
    protection: 'not security state',
    why: 'a condition item transactions check while a mount is disabled',
  }),
  // A mount's own storage, by the type of the mount.
  row({
    name: 'login configuration and roles (JWT/OIDC)',
    where: '`mount#<uuid>` / `config`, `role/<name>`',
    pk: anyMount,
    sk: /^(config|role\/.*)$/,
    mountTypes: ['jwt', 'oidc'],
    protection: 'MAC',
    mac: authenticatedValueKind,
    why: "whose JWTs log in and which policies a login's token gets",
  }),
  row({
    name: 'OIDC sign-in in progress (secrets)',
    where: '`mount#<uuid>` / `oidc-state/<state>`',
    pk: anyMount,
    sk: /^oidc-state\//,
    mountTypes: ['jwt', 'oidc'],
    protection: 'MAC',
    mac: authenticatedValueKind,
    shortLived: true,
    why: 'the role, redirect, nonces and expiry a callback trusts',
  }),
  row({
    name: 'login identity (JWT/OIDC)',
    where: '`mount#<uuid>` / `identity/…`',
    pk: anyMount,
    sk: /^identity\//,
    mountTypes: ['jwt', 'oidc'],
    protection: 'not security state',
    why: "the entity and alias ids a login's token carries as metadata; no policy comes from them",
  }),
  row({
    name: 'token role',
    where: '`mount#token` / `role/<name>`',
    pk: /^mount#token$/,
    sk: /^role\//,
    protection: 'MAC',
    mac: authenticatedValueKind,
    why: 'which policies and TTLs `auth/token/create/:role` may grant',
  }),
  row({
    name: 'plugin identity key',
    where: '`mount#<uuid>` / `identity-token-key`',
    pk: anyMount,
    sk: /^identity-token-key$/,
    protection: 'sealed',
    why: 'the key that signs plugin identity tokens: the whole JWK is sealed bound to its key, so it can be neither read nor replaced',
  }),
  row({
    name: 'write-ahead record',
    where: '`mount#<uuid>` / `wal/…`',
    pk: anyMount,
    sk: /^wal\//,
    protection: 'not security state',
    why: 'work to roll back after a crash (upstream objects to delete, a password to settle); a forged one makes the engine delete or settle what it names, only in its own upstream',
  }),
  // The engines' own items, as each engine's backend declares them (`Backend.storedItems`), in the family list's order.
  ...backendsOf(allSecretsFamilies).flatMap((backend) =>
    (backend.storedItems ?? []).map((item) => row({ ...item, pk: anyMount, mountTypes: [backend.type] })),
  ),
  // The scheduler's partitions.
  row({
    name: 'scheduler ACL token',
    where: '`sched#token` / `<accessor ID>`',
    pk: /^sched#token$/,
    sk: /./,
    protection: 'MAC',
    mac: schedulerTokenKind,
    why: "a token's type, policies, roles and expiry",
  }),
  row({
    name: "scheduler token's secret",
    where: '`sched#secret` / `<keyed hash>`',
    pk: /^sched#secret$/,
    sk: /./,
    protection: 'link',
    why: 'finds a token by its secret; the token must carry the hash back',
  }),
  row({
    name: 'scheduler ACL policy',
    where: '`sched#policy` / `<name>`',
    pk: /^sched#policy$/,
    sk: /./,
    protection: 'MAC',
    mac: schedulerPolicyKind,
    why: 'what a token may do',
  }),
  row({
    name: 'scheduler ACL role',
    where: '`sched#role` / `<ID>`',
    pk: /^sched#role$/,
    sk: /./,
    protection: 'MAC',
    mac: roleKind,
    why: 'the policies a role brings',
  }),
  row({
    name: "scheduler role's name",
    where: '`sched#role-name` / `<name>`',
    pk: /^sched#role-name$/,
    sk: /./,
    protection: 'link',
    why: 'finds a role by name; the role must carry the name back',
  }),
  row({
    name: 'scheduler auth method',
    where: '`sched#auth-method` / `<name>`',
    pk: /^sched#auth-method$/,
    sk: /./,
    protection: 'MAC',
    mac: authMethodKind,
    why: 'whose JWTs log in (its OIDC client secret sealed)',
  }),
  row({
    name: 'scheduler binding rule',
    where: '`sched#binding-rule` / `<ID>`',
    pk: /^sched#binding-rule$/,
    sk: /./,
    protection: 'MAC',
    mac: bindingRuleKind,
    why: 'which claims get which role, policy or management',
  }),
  row({
    name: 'scheduler OIDC sign-in in progress',
    where: '`sched#oidc-state` / `<state>`',
    pk: /^sched#oidc-state$/,
    sk: /./,
    protection: 'MAC',
    mac: oidcStateKind,
    shortLived: true,
    why: 'the method, redirect, nonces and expiry a completion trusts',
  }),
  row({
    name: 'scheduler bootstrap marker',
    where: '`sched#meta` / `bootstrap`',
    pk: /^sched#meta$/,
    sk: /^bootstrap$/,
    protection: 'MAC',
    mac: bootstrapMarkerKind,
    why: "its absence would offer a bootstrap again (never believed beside any ACL item); it carries the bootstrap's epoch, which every ACL kind's MAC binds",
  }),
  row({
    name: 'scheduler indexes and counts',
    where: '`sched#meta` / `index`, `table#<table>`, `nodes#count`, `marks#overflow`',
    pk: /^sched#meta$/,
    sk: /^(index|table#.+|nodes#count|marks#overflow)$/,
    protection: 'not security state',
    why: 'Raft-like indexes for blocking queries and ordering, the node count the heartbeat TTL reads, and the index of the last write whose beat marks did not fit it (a move only makes snapshots read more)',
  }),
  row({
    name: 'node sweep lease',
    where: '`sched#node-sweep` / `lease`',
    pk: /^sched#node-sweep$/,
    sk: /^lease$/,
    protection: 'not security state',
    why: 'until when a heartbeat that ran the node sweep holds it; a forged one longer than one sweep period is taken over, and the minute job sweeps regardless',
  }),
  row({
    name: 'garbage collection interval',
    where: '`sched#gc` / `last`',
    pk: /^sched#gc$/,
    sk: /^last$/,
    protection: 'not security state',
    why: 'when the sweep last ran the garbage collection, so it runs once an interval across processes; one forged into the future is taken over, and `PUT /v1/system/gc` runs regardless',
  }),
  row({
    name: 'forced garbage collection request',
    where: '`sched#gc` / `forced`',
    pk: /^sched#gc$/,
    sk: /^forced$/,
    protection: 'not security state',
    why: "a forced collection requested by `PUT /v1/system/gc` and not yet run, with the lease of the run that holds it; a forged one requests a collection, which reaps only what has finished (as a management token's request; whoever writes the table can delete those items anyway), and a lease forged further ahead than one lease is taken over",
  }),
  row({
    name: 'blocking query place',
    where: '`sched#wait#<waiter>` / `slot#<n>`',
    pk: /^sched#wait#/,
    sk: /^slot#\d+$/,
    protection: 'not security state',
    why: 'one of the places a token holds while its blocking queries wait; a forged one takes a place (denial of service)',
  }),
  row({
    name: 'scheduler event',
    where: '`sched#event` / `<index>`',
    pk: /^sched#event$/,
    sk: /^\d+$/,
    protection: 'not security state',
    why: "what a stream delivers; every delivery is checked against the subscriber's current ACL",
  }),
  row({
    name: 'node pool',
    where: '`sched#node-pool` / `<name>`',
    pk: /^sched#node-pool$/,
    sk: /./,
    protection: 'MAC',
    mac: nodePoolKind,
    why: 'where work may be placed',
  }),
  row({
    name: 'scheduler configuration',
    where: '`sched#scheduler-config` / `config`',
    pk: /^sched#scheduler-config$/,
    sk: /^config$/,
    protection: 'MAC',
    mac: schedulerConfigKind,
    why: 'which job types may preempt others, the placement algorithm',
  }),
  row({
    name: 'namespace',
    where: '`sched#namespace` / `<name>`',
    pk: /^sched#namespace$/,
    sk: /./,
    protection: 'MAC',
    mac: namespaceKind,
    why: 'the unit ACL policies grant on',
  }),
  row({
    name: 'cluster node',
    where: '`sched#node#<shard>` / `<node ID>`',
    pk: new RegExp(`^sched#node(${shard})?$`),
    sk: /./,
    protection: 'MAC',
    mac: nodeKind,
    why: 'a registered node, its pool and attributes',
  }),
  row({
    name: "cluster node's liveness",
    where: '`sched#node-beat#<shard>` / `<node ID>`',
    pk: new RegExp(`^sched#node-beat(${shard})?$`),
    sk: /./,
    protection: 'MAC',
    mac: beatKind,
    why: "a node's secret's keyed hash and status, its allocation version and its node and allocation marks (what the snapshot trusts held nodes and allocations by); the heartbeat deadline stays outside the MAC as bookkeeping",
  }),
  row({
    name: 'job',
    where: '`sched#job#<namespace>` / `<job ID>`',
    pk: /^sched#job#/,
    sk: /./,
    protection: 'MAC',
    mac: jobKind,
    why: 'what runs where, in which pool, with which tasks',
  }),
  row({
    name: "job's version",
    where: '`sched#job-version#<namespace>#<job ID>` / `<version>`',
    pk: /^sched#job-version#/,
    sk: /^\d+$/,
    protection: 'MAC',
    mac: jobVersionKind,
    why: 'a whole job as it was at a version, which a revert would run again',
  }),
  row({
    name: 'job summary',
    where: '`sched#job-summary#<namespace>` / `<job ID>`',
    pk: /^sched#job-summary#/,
    sk: /./,
    protection: 'not security state',
    why: "counts of a job's allocations by client state and of its children by status, shown in job lists; nothing is decided by them",
  }),
  row({
    name: 'evaluation',
    where: '`sched#eval#<shard>` / `<evaluation ID>`',
    pk: new RegExp(`^sched#eval(${shard})?$`),
    sk: /./,
    protection: 'MAC',
    mac: evaluationKind,
    why: 'the work the scheduler is asked to place',
  }),
  row({
    name: 'deployment',
    where: '`sched#deployment#<shard>` / `<deployment ID>`',
    pk: new RegExp(`^sched#deployment${shard}$`),
    sk: /./,
    protection: 'MAC',
    mac: deploymentKind,
    why: 'how far a job’s rollout went: a forged one would promote canaries or mark allocations of a failed one healthy',
  }),
  row({
    name: 'service registration',
    where: '`sched#service#<namespace>` / `<service name>#<ID>`',
    pk: /^sched#service#/,
    sk: /./,
    protection: 'MAC',
    mac: serviceKind,
    why: 'where a service is reached: a forged address sends its callers elsewhere',
  }),
  row({
    name: "allocation's service link",
    where: '`sched#service-alloc#<allocation ID>` / `<registration ID>`',
    pk: /^sched#service-alloc#/,
    sk: /./,
    protection: 'link',
    why: 'finds a registration by ID and an allocation’s registrations; each is read and verified and must name the allocation and ID back',
  }),
  row({
    name: 'allocation',
    where: '`sched#alloc#node#<node ID>` / `<allocation ID>`',
    pk: /^sched#alloc#node#/,
    sk: /./,
    protection: 'MAC',
    mac: allocationKind,
    why: 'what a node runs: the node fetches it and runs its job version; stored compact (allocations/item-form.ts), the MAC over its key and what is stored',
  }),
  row({
    name: "allocation's links",
    where: '`sched#alloc#job#<namespace>#<job ID>` and `sched#alloc#id#<shard>` / `<allocation ID>`',
    pk: new RegExp(`^sched#alloc#(job#|id${shard}$)`),
    sk: /./,
    protection: 'MAC',
    mac: allocationLinkKind,
    why: 'which node an allocation is on (a moved allocation does not verify at another node)',
  }),
  row({
    name: "job's evaluation lease",
    where: '`sched#eval-lease#<shard>` / `<namespace>#<job ID>`',
    pk: new RegExp(`^sched#eval-lease${shard}$`),
    sk: /./,
    protection: 'not security state',
    why: 'which worker runs a job’s evaluation: a forged one delays the job’s evaluations until it expires (a minute)',
  }),
  row({
    name: 'record of room made',
    where: '`sched#capacity#<shard>` / `<index>#<node ID>`',
    pk: new RegExp(`^sched#capacity${shard}$`),
    sk: /^\d{16}#/,
    protection: 'not security state',
    why: 'that a write made room on a node, which wakes blocked evaluations: a forged one wakes them early (a run that places nothing new), a deleted one leaves them blocked until room is made again',
  }),
];

/**
 * The row an item's key belongs to: the first that matches, a mount's storage only by rows of its type (or of any
 * type). `mountType` gives the type of the mount a `mount#<uuid>` partition belongs to.
 */
export function itemKindOf(
  pk: string,
  sk: string,
  mountType?: (uuid: string) => string | undefined,
): ItemKindRow | undefined {
  const uuid = anyMount.test(pk) ? pk.slice('mount#'.length) : undefined;
  const type = uuid === undefined ? undefined : mountType?.(uuid);
  return itemKindRows.find(
    (candidate) =>
      candidate.pk.test(pk) &&
      candidate.sk.test(sk) &&
      (candidate.mountTypes === undefined || (type !== undefined && candidate.mountTypes.includes(type))),
  );
}
