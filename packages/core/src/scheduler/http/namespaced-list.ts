/**
 * The list route of a namespaced cluster resource, as Nomad's `GET /v1/evaluations`, `/v1/deployments` and
 * `/v1/allocations` answer: `prefix` on the ID, `namespace` (default `default`; `*` every namespace the caller may
 * read), the list query (`filter`, `per_page`, `next_token`, `reverse`: `list-query.ts`), `read-job` in the namespace
 * asked for (else 403), each item shown only where the caller may read its own namespace, walked in ID order. A
 * resource adds its own query parameters, which of its items they keep, and what of an item is shown (the filter
 * sees what is shown: Nomad filters the stub a list answers).
 */
import * as z from 'zod/mini';
import type { Scheduler } from '../composition/scheduler-core.ts';
import type { TableName } from '../state.ts';
import { ListPage, listParameters, paginate, parsedFilter } from './list-query.ts';
import { permissionDenied } from './nomad.ts';
import { type ParameterSchemas, type ParsedParameters, route, type SchedulerRoute } from './route.ts';

export const namespaceQuery = z
  .optional(z.string())
  .check(z.describe('The namespace (default `default`; `*` for every namespace the caller may read, on lists).'));

export interface NamespacedListRow<Item extends { ID: string; Namespace: string }, Extra extends ParameterSchemas> {
  path: string;
  summary: string;
  /** What the items are called in the parameters' descriptions (`evaluations`). */
  noun: string;
  /** The resource's own query parameters, besides `prefix`, `namespace` and the list query. */
  query: Extra;
  blocking: TableName[];
  returns: string;
  /** Every item of the resource (the route keeps those of the namespace asked for). */
  items: (scheduler: Scheduler) => Promise<Item[]>;
  /** Which items the resource's own parameters keep (all by default). */
  keeps?: (item: Item, query: ParsedParameters<Extra>) => boolean;
  /** What of an item the list shows, and its filter sees (the item by default). */
  shows?: (item: Item, query: ParsedParameters<Extra>) => Record<string, unknown>;
}

export function namespacedListRoute<Item extends { ID: string; Namespace: string }, Extra extends ParameterSchemas>(
  row: NamespacedListRow<Item, Extra>,
): SchedulerRoute {
  return route({
    method: 'GET',
    path: row.path,
    summary: row.summary,
    access: 'token',
    query: {
      ...row.query,
      prefix: z.optional(z.string()).check(z.describe(`Only ${row.noun} whose ID starts with this.`)),
      namespace: namespaceQuery,
      ...listParameters,
    },
    blocking: row.blocking,
    returns: row.returns,
    handler: async ({ scheduler, caller, query }) => {
      const who = await caller();
      const namespace = query.namespace || 'default';
      if (!who.acl.allowNamespaceOperation(namespace, 'read-job')) throw permissionDenied();
      const expression = await parsedFilter(query.filter);
      const own = query as unknown as ParsedParameters<Extra>;
      const shows = (item: Item): Record<string, unknown> => (row.shows ? row.shows(item, own) : { ...item });
      return {
        read: async () => {
          const page = paginate(
            (await row.items(scheduler)).filter(
              (item) =>
                (namespace === '*' || item.Namespace === namespace) &&
                item.ID.startsWith(query.prefix ?? '') &&
                (row.keeps?.(item, own) ?? true),
            ),
            {
              ...query,
              expression,
              idOf: (item) => item.ID,
              datum: shows,
              allowed: (item) => who.acl.allowNamespaceOperation(item.Namespace, 'read-job'),
            },
          );
          return row.shows ? new ListPage(page.items.map(shows), page.nextToken) : page;
        },
      };
    },
  });
}
