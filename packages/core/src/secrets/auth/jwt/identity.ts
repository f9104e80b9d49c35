import { epochSeconds } from '../../../lib/clock.ts';
import { uuid } from '../../../lib/random.ts';
import { ConditionFailed } from '../../../storage/store.ts';
import type { Request } from '../../framework/backend.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';

/**
 * Identity for this login method, kept in the mount's storage: one entity per user-claim value (its alias),
 * stable across logins, with the group aliases the groups claim named at the last login. Tokens carry the
 * entity id, which other engines compare (e.g. the directory library's check-in enforcement).
 */
export interface Entity {
  id: string;
  mount_accessor: string;
  alias_name: string;
  alias_metadata: Record<string, string>;
  group_aliases: Array<{ id: string; name: string }>;
  created_at: number;
  updated_at: number;
}

interface AliasRecord {
  entity_id: string;
  name: string;
}

interface GroupAliasRecord {
  id: string;
  name: string;
}

const aliasKey = (name: string) => `identity/alias/${encodeURIComponent(name)}`;
const entityKey = (id: string) => `identity/entity/${id}`;
const groupAliasKey = (name: string) => `identity/group-alias/${encodeURIComponent(name)}`;

/** What this process last wrote per alias, so a repeated login with the same claims costs no table access. */
const known = new Map<string, { entityId: string; fingerprint: string }>();

/** The entity id for a login's alias, creating or updating the entity and its group aliases as needed. */
export async function resolveEntity(
  request: Pick<Request, 'storage' | 'system' | 'mount'>,
  alias: { name: string; metadata: Record<string, string> },
  groups: string[],
): Promise<string> {
  const { storage, system } = request;
  const cacheKey = `${request.mount.uuid}|${alias.name}`;
  const fingerprint = JSON.stringify([alias.metadata, groups]);
  const hit = known.get(cacheKey);
  if (hit && hit.fingerprint === fingerprint) return hit.entityId;

  const now = epochSeconds(system.clock);
  const groupAliases = await Promise.all(groups.map((name) => ensureGroupAlias(storage, name)));
  let entityId = (await storage.get<AliasRecord>(aliasKey(alias.name)))?.entity_id;
  if (!entityId) {
    const created: Entity = {
      id: uuid(),
      mount_accessor: request.mount.accessor,
      alias_name: alias.name,
      alias_metadata: alias.metadata,
      group_aliases: groupAliases,
      created_at: now,
      updated_at: now,
    };
    try {
      await storage.transact([
        {
          put: aliasKey(alias.name),
          item: { value: { entity_id: created.id, name: alias.name } },
          when: { absent: true },
        },
        { put: entityKey(created.id), item: { value: created } },
      ]);
      entityId = created.id;
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
      // Another login created the alias first: use its entity.
      entityId = (await storage.get<AliasRecord>(aliasKey(alias.name)))?.entity_id;
      if (!entityId) throw error;
    }
  }
  const entity = await storage.get<Entity>(entityKey(entityId));
  if (
    entity &&
    JSON.stringify([entity.alias_metadata, entity.group_aliases]) !== JSON.stringify([alias.metadata, groupAliases])
  ) {
    await storage.put(entityKey(entityId), {
      ...entity,
      alias_metadata: alias.metadata,
      group_aliases: groupAliases,
      updated_at: now,
    });
  }
  if (known.size > 100_000) known.clear();
  known.set(cacheKey, { entityId, fingerprint });
  return entityId;
}

async function ensureGroupAlias(storage: MountStorage, name: string): Promise<GroupAliasRecord> {
  const existing = await storage.get<GroupAliasRecord>(groupAliasKey(name));
  if (existing) return { id: existing.id, name: existing.name };
  const record = { id: uuid(), name };
  try {
    await storage.put(groupAliasKey(name), record, { ifAbsent: true });
    return record;
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    const winner = await storage.get<GroupAliasRecord>(groupAliasKey(name));
    if (!winner) throw error;
    return { id: winner.id, name: winner.name };
  }
}

/** The entity behind an id, for engines and tests that need more than the id a token carries. */
export function readEntity(storage: MountStorage, entityId: string): Promise<Entity | undefined> {
  return storage.get<Entity>(entityKey(entityId));
}
