import type { Core } from '../core.ts';
import { epochSeconds } from '../lib/clock.ts';

/**
 * The due queue (GSI `due`): items that fall due at an epoch second sort by `dueSk = <padded epoch>#<what>`,
 * so a sweep asks one query for everything due up to now.
 */
export const dueKey = (epochSeconds: number, what: string) => `${String(epochSeconds).padStart(12, '0')}#${what}`;

/** When DynamoDB's TTL may delete an item the sweep should have handled long before: an hour's grace. */
export const ttlBackstop = (epochSeconds: number) => epochSeconds + 3600;

/** Up to `limit` items of a queue whose time has come, earliest first. */
export const dueItems = (core: Core, queue: string, limit: number) =>
  core.store
    .query({
      IndexName: 'due',
      KeyConditionExpression: 'duePk = :queue AND dueSk <= :now',
      ExpressionAttributeValues: { ':queue': queue, ':now': dueKey(epochSeconds(core.clock), '~') },
      Limit: limit,
    })
    .then((items) => items.slice(0, limit));

/** When the earliest item of these queues falls due (epoch seconds; past if something is due now), if any. */
export async function nextDue(core: Core, queues: string[]): Promise<number | undefined> {
  const heads = await Promise.all(
    queues.map((queue) =>
      core.store.query({
        IndexName: 'due',
        KeyConditionExpression: 'duePk = :queue',
        ExpressionAttributeValues: { ':queue': queue },
        Limit: 1,
      }),
    ),
  );
  const times = heads.flatMap((items) => items.slice(0, 1).map((item) => Number.parseInt(String(item.dueSk), 10)));
  return times.length > 0 ? Math.min(...times) : undefined;
}
