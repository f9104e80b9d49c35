import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MountEntry } from '../../packages/core/src/secrets/mounts/mount-table.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

/**
 * DynamoDB cancels a transaction that meets another one in progress on any of its items (TransactionConflict) and
 * writes nothing; the SDK does not retry it. DynamoDB Local runs transactions one at a time and never answers so,
 * so DynamoDB's answer is put in front of the real call here, for the first attempts, as AWS would give it.
 */
let h: SecretsHarness;
const asRoot = (body?: unknown) => ({ token: h.rootToken, ...(body === undefined ? {} : { body }) });

/** A TransactWriteItems input as the client sends it: keys as DynamoDB attribute values. */
type SentKey = { pk: { S: string }; sk: { S: string } };
interface Sent {
  TransactItems?: Array<Record<string, { Key?: SentKey; Item?: SentKey }>>;
}

/** Records every TransactWriteItems input, and cancels the first `conflicts` of them as DynamoDB does on a conflict. */
function conflictsOnTransactions(conflicts: number): Sent[] {
  const sent: Sent[] = [];
  let left = conflicts;
  h.client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'TransactWriteItemsCommand') return next(args);
      const input = args.input as Sent;
      sent.push(input);
      if (left-- > 0) {
        throw new TransactionCanceledException({
          message:
            'Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]',
          $metadata: { httpStatusCode: 400 },
          CancellationReasons: (input.TransactItems ?? []).map((_, position) =>
            position === 1
              ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }
              : { Code: 'None' },
          ),
        });
      }
      return next(args);
    },
    { step: 'initialize', name: `conflicts-${Math.random()}` },
  );
  return sent;
}

beforeEach(async () => {
  h = await startSecrets();
});
afterEach(() => h.close());

describe('a transaction cancelled by a conflict', () => {
  it('is tried again and written once: the token works and is indexed once under its parent', async () => {
    const sent = conflictsOnTransactions(2);
    const created = await h.call('POST', '/v1/auth/token/create', asRoot({ policies: ['default'], ttl: '1h' }));
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(sent).toHaveLength(3);
    const token = created.body.auth.client_token as string;
    expect((await h.call('GET', '/v1/auth/token/lookup-self', { token })).status).toBe(200);
    const children = await h.core.store.list(`token#${h.core.keyring.hash(h.rootToken)}`, { prefix: 'child#' });
    expect(children.filter((item) => item.sk === `child#${h.core.keyring.hash(token)}`)).toHaveLength(1);
  });

  it('answers 503 naming the conflict after six tries, and nothing is written', async () => {
    const sent = conflictsOnTransactions(6);
    const before = await h.core.store.list(`token#${h.core.keyring.hash(h.rootToken)}`, { prefix: 'child#' });
    const refused = await h.call(
      'POST',
      '/v1/auth/token/create',
      asRoot({ policies: ['default'], ttl: '1h', id: 'hvs.conflicted-token-id' }),
    );
    expect(refused.status).toBe(503);
    expect(refused.body.errors[0]).toContain(
      'the write met concurrent writes to the same items 6 times; nothing was written',
    );
    expect(sent).toHaveLength(6);
    expect(await h.core.store.list(`token#${h.core.keyring.hash('hvs.conflicted-token-id')}`)).toEqual([]);
    expect(await h.core.store.list(`token#${h.core.keyring.hash(h.rootToken)}`, { prefix: 'child#' })).toEqual(before);
    // The next try, with no conflict, goes through.
    const again = await h.call(
      'POST',
      '/v1/auth/token/create',
      asRoot({ policies: ['default'], ttl: '1h', id: 'hvs.conflicted-token-id' }),
    );
    expect(again.status).toBe(200);
  });
});

describe("a login's in-service check", () => {
  it('is one of 16 markers chosen by the token, not the mount item every login would contend for; disabling sets all 16', async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    for (const [url, body] of [
      ['/v1/sys/auth/jwt', { type: 'jwt' }],
      [
        '/v1/auth/jwt/config',
        { jwt_validation_pubkeys: [await exportSPKI(publicKey)], bound_issuer: 'https://ci.example' },
      ],
      [
        '/v1/auth/jwt/role/ci',
        {
          role_type: 'jwt',
          user_claim: 'sub',
          bound_audiences: ['keyhaven'],
          token_policies: ['app'],
          token_ttl: '1h',
        },
      ],
    ] as const) {
      expect((await h.call('POST', url, asRoot(body))).status).toBe(204);
    }
    const mount = (await h.core.store.get('mounts', 'auth/jwt/'))?.entry as MountEntry;
    const sent = conflictsOnTransactions(0);
    const now = Math.floor(h.clock.now() / 1000);
    for (let user = 0; user < 24; user++) {
      const jwt = await new SignJWT({ iss: 'https://ci.example', aud: 'keyhaven', sub: `builder-${user}` })
        .setProtectedHeader({ alg: 'RS256' })
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(privateKey);
      expect((await h.call('POST', '/v1/auth/jwt/login', { body: { role: 'ci', jwt } })).status).toBe(200);
    }
    const checked = sent.flatMap((input) =>
      (input.TransactItems ?? []).flatMap((item) =>
        item.ConditionCheck?.Key ? [{ pk: item.ConditionCheck.Key.pk.S }] : [],
      ),
    );
    expect(checked.some((key) => key.pk === 'mounts')).toBe(false);
    const markers = new Set(checked.map((key) => key.pk));
    for (const pk of markers) expect(pk).toMatch(new RegExp(`^in-service#${mount.uuid}#(0\\d|1[0-5])$`));
    expect(markers.size).toBeGreaterThan(8);

    expect((await h.call('DELETE', '/v1/sys/auth/jwt', asRoot())).status).toBe(204);
    for (let shard = 0; shard < 16; shard++) {
      const marker = await h.core.store.get(`in-service#${mount.uuid}#${String(shard).padStart(2, '0')}`, 'marker');
      expect(marker).toMatchObject({ disabling: true, expiresAt: now + 86_400 });
    }
  });
});
