/**
 * ACL auth methods in the table: one item per method (`AUTH_METHOD_PK`, the name); the OIDC client secret is sealed
 * at rest. Deleting a method deletes its binding rules too (`AclBindingRules.deleteAuthMethod`).
 */
import { badRequest, notFound } from '../../../lib/errors.ts';
import type { Keyring } from '../../../storage/keyring.ts';
import { itemKind } from '../../../storage/item-mac.ts';
import { macAttribute } from '../../../storage/item-mac.ts';
import { ConditionFailed, type Item, type Write } from '../../../storage/store.ts';
import { AUTH_METHOD_PK } from '../../keys.ts';
import type { SchedulerState } from '../../state.ts';
import { keyedContentHash, rfc3339, sameContent, unchangedSince, withoutKeys } from '../common.ts';
import { validAuthMethodName } from '../identifiers.ts';
import { type AclAuthMethod, type AuthMethodBody, authMethodEvent, pickContent, validateAuthMethod } from './model.ts';

const sealContext = (name: string) => `scheduler/auth-method/${name}`;

/** An auth method item is authenticated whole (`storage/item-mac.ts`): a forged or moved one does not exist. */
export const authMethodKind = itemKind('scheduler-acl-auth-method', [], { epoch: 'bootstrap' });

export class AclAuthMethods {
  constructor(
    private readonly state: SchedulerState,
    private readonly keyring: Keyring,
  ) {}

  private unseal(item: Record<string, unknown> | undefined): AclAuthMethod | undefined {
    const method = withoutKeys<AclAuthMethod & { SealedClientSecret?: string }>(item as never);
    if (!method) return undefined;
    const { SealedClientSecret, ...rest } = method;
    if (SealedClientSecret)
      rest.Config = { ...rest.Config, OIDCClientSecret: this.keyring.open(SealedClientSecret, sealContext(rest.Name)) };
    // Computed on every read, not taken from the item: one written before the digest was keyed holds a bare SHA-256
    // until `rehash` below has rewritten it.
    rest.Hash = keyedContentHash(this.keyring, pickContent(rest));
    return rest;
  }

  /**
   * A verified method item read with a `Hash` that is not its keyed digest (written before the digest was keyed: a
   * bare SHA-256 over content holding the client secret, which whoever reads the table could guess against offline)
   * is rewritten once with the keyed digest and a new MAC, on this first read. The write is conditional on the item's
   * MAC as read, so it changes nothing else and loses to any write in between (that one stores the keyed digest).
   */
  private async rehash(item: Item, method: AclAuthMethod): Promise<void> {
    if (item.Hash === method.Hash) return;
    const store = this.state.store;
    const rewritten = { ...item, Hash: method.Hash };
    try {
      await store.update(
        { pk: item.pk, sk: item.sk },
        { set: { Hash: method.Hash, [macAttribute]: store.macOf(authMethodKind, rewritten) } },
        { when: { equals: { [macAttribute]: item[macAttribute] } } },
      );
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
    }
  }

  /** The method item, unsealed, with its stored `Hash` brought to the keyed digest (see `rehash`). */
  private async opened(item: Item | undefined): Promise<AclAuthMethod | undefined> {
    const method = this.unseal(item);
    if (item && method) await this.rehash(item, method);
    return method;
  }

  /** The method of that name; a name no method can have (it might not fit a key) finds none. */
  async get(name: string): Promise<AclAuthMethod | undefined> {
    if (!validAuthMethodName.test(name)) return undefined;
    return this.opened(await this.state.store.getVerified(authMethodKind, AUTH_METHOD_PK, name));
  }

  async list(): Promise<AclAuthMethod[]> {
    const items = (await this.state.store.list(AUTH_METHOD_PK)).filter((item) =>
      this.state.store.verified(authMethodKind, item),
    );
    return Promise.all(items.map(async (item) => (await this.opened(item)) as AclAuthMethod));
  }

  /**
   * Creates (`create`: the name must be free) or updates a method; an unchanged method keeps its index. The reads
   * are made in the write's plan: of concurrent creates of one name one wins, and an identical change is made once.
   */
  async upsert(body: AuthMethodBody, mode: 'create' | 'update'): Promise<AclAuthMethod> {
    const content = validateAuthMethod(body);
    const name = content.Name;
    const now = rfc3339(this.state.clock.now());
    let result: AclAuthMethod | undefined;
    await this.state.commit(async (index) => {
      const existing = await this.get(name);
      if (mode === 'create' && existing) throw badRequest(`auth method ${name} already exists`);
      if (mode === 'update' && !existing) throw notFound('ACL auth-method not found');
      if (content.Default) {
        const other = (await this.list()).find(
          (method) => method.Default && method.Type === content.Type && method.Name !== name,
        );
        if (other) throw badRequest(`default method for type ${content.Type} already exists: ${other.Name}`);
      }
      if (existing && sameContent(content, pickContent(existing))) {
        result = existing;
        return undefined;
      }
      const stored: AclAuthMethod = {
        ...content,
        Hash: keyedContentHash(this.keyring, content),
        CreateTime: existing?.CreateTime ?? now,
        ModifyTime: now,
        CreateIndex: existing?.CreateIndex ?? index,
        ModifyIndex: index,
      };
      result = stored;
      const { OIDCClientSecret, ...publicConfig } = stored.Config;
      return {
        items: [
          {
            put: this.state.store.signed(authMethodKind, {
              pk: AUTH_METHOD_PK,
              sk: name,
              ...stored,
              Config: publicConfig,
              ...(OIDCClientSecret
                ? { SealedClientSecret: this.keyring.seal(OIDCClientSecret, sealContext(name)) }
                : {}),
            }),
            when: unchangedSince(existing),
          },
        ],
        tables: ['acl_auth_method'],
        events: [authMethodEvent('ACLAuthMethodUpserted', stored)],
      };
    });
    return result as AclAuthMethod;
  }

  /** The transaction item that deletes the method `name` if it exists. */
  deleteItem(name: string): Write {
    return { delete: { pk: AUTH_METHOD_PK, sk: name }, when: { exists: true } };
  }

  /** The transaction item that holds only while the method `name` exists. */
  existsCheck(name: string): Write {
    return { check: { pk: AUTH_METHOD_PK, sk: name }, when: { exists: true } };
  }

  event(type: string, method: AclAuthMethod) {
    return authMethodEvent(type, method);
  }
}
