/**
 * What each function may do on the table, derived from what it sends: `test/deploy/function-permissions.test.ts`
 * runs every function (DynamoDB Local, the KMS, Lambda, Consul and Google emulators, a real slapd), records each AWS
 * call it makes, maps it to IAM actions (a transaction item by item) and checks the synthesised role grants those
 * actions and nothing more. DynamoDB Local enforces no IAM, so that check is what keeps a role from missing one.
 */

export type TableAction =
  | 'dynamodb:GetItem'
  | 'dynamodb:BatchGetItem'
  | 'dynamodb:PutItem'
  | 'dynamodb:UpdateItem'
  | 'dynamodb:DeleteItem'
  | 'dynamodb:Query'
  | 'dynamodb:ConditionCheckItem';

export interface TableAccess {
  /** Actions on the table's items. */
  items: TableAction[];
  /**
   * The partition keys the function may touch (IAM `StringLike` patterns on `dynamodb:LeadingKeys`), where its
   * items are known: the scheduler's functions touch only `sched#…` and the keyring in `sys`; the stream function
   * only tokens, leases and what revoking them touches, never a secrets engine's items (`mount#…`).
   * Absent: the whole table.
   */
  leadingKeys?: string[];
  /** Whether it queries the `due` index (the jobs that sweep what falls due). */
  queriesDueIndex: boolean;
}

const read: TableAction[] = ['dynamodb:GetItem', 'dynamodb:Query'];
const write: TableAction[] = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'];
const transact: TableAction = 'dynamodb:ConditionCheckItem';

/** Tokens, their accessors and leases, the mount table and the keyring: what the stream function revokes with. */
const tokensAndLeases = ['accessor#*', 'issued#*', 'leases#*', 'mounts', 'revoked-leases#*', 'sys', 'token#*'];
const scheduler = ['sched#*', 'sys'];

/** By function id, as the stacks name them (`Secrets-<family>`, `Scheduler-…`, `Job-…`). */
export const tableAccess: Record<string, TableAccess> = {
  'Secrets-system': { items: [...read, ...write, transact], queriesDueIndex: false },
  // The authenticated read path reads the token and the secret in one BatchGetItem (`PathSpec.prefetch`).
  'Secrets-kv': { items: [...read, 'dynamodb:BatchGetItem', ...write], queriesDueIndex: false },
  // A limited-use token spends its uses (UpdateItem) in whichever function serves the request.
  'Secrets-jwt': { items: [...read, ...write, transact], queriesDueIndex: false },
  'Secrets-ldap': { items: [...read, ...write], queriesDueIndex: false },
  'Secrets-mesh': { items: [...read, ...write], queriesDueIndex: false },
  'Secrets-cloud': { items: [...read, ...write], queriesDueIndex: false },
  'Scheduler-api': { items: [...read, ...write, transact], leadingKeys: scheduler, queriesDueIndex: false },
  'Scheduler-event-stream': { items: read, leadingKeys: scheduler, queriesDueIndex: false },
  'Job-sweep': { items: [...read, 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'], queriesDueIndex: true },
  'Job-ldap': { items: [...read, ...write], queriesDueIndex: true },
  'Job-cloud': { items: [...read, ...write], queriesDueIndex: true },
  'Job-mesh': { items: [...read, ...write], queriesDueIndex: true },
  // Not read-only: a lease TTL removed is put back and revoked, a token TTL removed is revoked (its children, leases).
  // Reads whether the stage is initialised and bootstrapped, writes the root token and the management token.
  'Deploy-first-tokens': { items: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'], queriesDueIndex: false },
  'Job-table-stream': { items: [...read, ...write, transact], leadingKeys: tokensAndLeases, queriesDueIndex: false },
};

export function tableAccessOf(functionId: string): TableAccess {
  const access = tableAccess[functionId];
  if (!access) throw new Error(`stacks/permissions.ts: no table access declared for function ${functionId}`);
  return access;
}
