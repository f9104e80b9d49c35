/**
 * Namespaces in the table: one signed item per namespace (`NAMESPACE_PK`, the name). `default` is answered as Nomad
 * creates it until it is written, and is never deleted. Every write is one transaction at one index (`state.ts`),
 * the `namespaces` table index its only trace besides the item: Nomad publishes no namespace events.
 */
import { badRequest, conflict, notFound } from '../../../lib/errors.ts';
import { itemKind } from '../../../storage/item-mac.ts';
import { sameContent, unchangedSince, withoutKeys } from '../../acl/common.ts';
import { NAMESPACE_PK } from '../../keys.ts';
import { type SchedulerState, WriteConditionFailed } from '../../state.ts';
import { liveJobInNamespace } from '../jobs-in-use.ts';
import {
  builtInDefaultNamespace,
  DEFAULT_NAMESPACE,
  type Namespace,
  type NamespaceContent,
  namespaceHash,
  validNamespaceName,
} from './model.ts';

/** A namespace item is authenticated whole (`storage/item-mac.ts`): a forged or moved namespace does not exist. */
export const namespaceKind = itemKind('scheduler-namespace');

export class Namespaces {
  constructor(private readonly state: SchedulerState) {}

  /** The namespace of that name; a name no namespace can have finds none. */
  async get(name: string): Promise<Namespace | undefined> {
    if (!validNamespaceName.test(name)) return undefined;
    const stored = withoutKeys<Namespace>(await this.state.store.getVerified(namespaceKind, NAMESPACE_PK, name));
    return stored ?? (name === DEFAULT_NAMESPACE ? builtInDefaultNamespace : undefined);
  }

  /** Every namespace, `default` included, sorted by name. */
  async list(): Promise<Namespace[]> {
    const stored = (await this.state.store.list(NAMESPACE_PK))
      .filter((item) => this.state.store.verified(namespaceKind, item))
      .map((item) => withoutKeys<Namespace>(item) as Namespace);
    const all = stored.some((namespace) => namespace.Name === DEFAULT_NAMESPACE)
      ? stored
      : [builtInDefaultNamespace, ...stored];
    return all.sort((a, b) => Buffer.compare(Buffer.from(a.Name), Buffer.from(b.Name)));
  }

  /** Creates or replaces a namespace (validated: `validateNamespace`); an unchanged one keeps its index. */
  async upsert(content: NamespaceContent): Promise<number> {
    let result = 0;
    try {
      await this.state.commit(async (index) => {
        const existing = await this.get(content.Name);
        if (existing && sameContent(content, contentOf(existing))) {
          result = existing.ModifyIndex;
          return undefined;
        }
        const stored: Namespace = {
          ...content,
          Hash: namespaceHash(content),
          CreateIndex: existing?.CreateIndex ?? index,
          ModifyIndex: index,
        };
        result = index;
        // The built-in default is not stored until it is changed: its first write expects no item.
        const storedBefore = existing && existing !== builtInDefaultNamespace ? existing : undefined;
        return {
          items: [
            {
              put: this.state.store.signed(namespaceKind, { pk: NAMESPACE_PK, sk: content.Name, ...stored }),
              when: unchangedSince(storedBefore),
            },
          ],
          tables: ['namespaces'],
        };
      });
    } catch (error) {
      if (error instanceof WriteConditionFailed) throw conflict('the namespace was modified concurrently; retry');
      throw error;
    }
    return result;
  }

  /** Deletes a namespace: 400 for `default`, 404 for none, 409 while a job that is not dead is in it. */
  async delete(name: string): Promise<number> {
    if (name === DEFAULT_NAMESPACE) throw badRequest('can not delete default namespace');
    return this.state.commit(async () => {
      const existing = await this.get(name);
      if (!existing) throw notFound('namespace not found');
      const job = await liveJobInNamespace(this.state.store, name);
      if (job)
        throw conflict(
          `namespace ${JSON.stringify(name)} contains at least one non-terminal job ${JSON.stringify(job.ID)}. All jobs must be terminal in namespace before it can be deleted`,
        );
      return {
        items: [{ delete: { pk: NAMESPACE_PK, sk: name }, when: { equals: { ModifyIndex: existing.ModifyIndex } } }],
        tables: ['namespaces'],
      };
    });
  }
}

function contentOf(namespace: Namespace): NamespaceContent {
  const { Hash: _hash, CreateIndex: _create, ModifyIndex: _modify, ...content } = namespace;
  return content;
}
