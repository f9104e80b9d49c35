/**
 * Nomad's list queries (`nomad/state/paginator`): `filter` (a go-bexpr expression over each item, `lib/bexpr.ts`),
 * `per_page` and `next_token` (the ID of the first item of the next page, answered in `X-Nomad-NextToken`) and
 * `reverse`. The items are walked in ID order (reversed with `reverse`); an item before the token is skipped, then the
 * filter, then the caller's own selector (the ACL), and a page ends one item past `per_page`, that item's ID being
 * the next token. A filter that does not parse is a 400 (`failed to create result paginator: …`), one that fails on
 * an item a 400 too (`failed to read result page: …`), as Nomad answers them.
 */
import * as z from 'zod/mini';
import {
  BexprEvaluationError,
  BexprSyntaxError,
  bexprReady,
  type Expression,
  evaluateBexpr,
  parseBexpr,
} from '../../lib/bexpr.ts';
import { badRequest } from '../../lib/errors.ts';

/** A page of a list: the body is `items`; `nextToken`, when set, is answered in `X-Nomad-NextToken`. */
export class ListPage<T> {
  constructor(
    readonly items: T[],
    readonly nextToken: string,
  ) {}
}

/** `?per_page=`: Go's strconv.ParseInt(…, 10, 32), as Nomad's parsePagination reads it. */
const perPage = z.pipe(
  z.string(),
  z.transform((text, ctx): number => {
    const value = /^[+-]?\d+$/.test(text) ? Number(text) : Number.NaN;
    if (Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31) return value;
    ctx.issues.push({ code: 'custom', input: text, message: 'Expect a number for `per_page` query string parameter' });
    return z.NEVER;
  }),
);

const flag = z.pipe(
  z.string(),
  z.transform((text) => text !== 'false'),
);

/** The query parameters of a paginated list (the route declares them with its own). */
export const listParameters = {
  filter: z
    .optional(z.string())
    .check(z.describe('A go-bexpr expression over each item (`Name == "prod"`); only items it holds for.')),
  per_page: z.optional(perPage).check(z.describe('At most this many items per page (0 or none: all).')),
  next_token: z
    .optional(z.string())
    .check(z.describe('Start at this item: the `X-Nomad-NextToken` of the page before.')),
  reverse: z.optional(flag).check(z.describe('List in reverse ID order.')),
};

export interface PageOptions {
  filter?: string | undefined;
  per_page?: number | undefined;
  next_token?: string | undefined;
  reverse?: boolean | undefined;
}

/**
 * The filter parsed at the request (a 400 naming the problem), before the blocking read begins; RE2 is loaded first
 * when it may use `matches` (a bundle keeps it in a chunk of its own: `lib/bexpr.ts`).
 */
export async function parsedFilter(text: string | undefined): Promise<Expression | undefined> {
  if (!text) return undefined;
  await bexprReady(text);
  try {
    return parseBexpr(text);
  } catch (error) {
    if (error instanceof BexprSyntaxError)
      throw badRequest(`failed to create result paginator: failed to read filter expression: ${error.message}`);
    throw error;
  }
}

/** Go's strings.Compare on the UTF-8 bytes. */
function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * One page of `items` (any order: they are sorted here by `idOf`), after the token, the filter and `allowed`.
 * `datum` is what the filter sees of an item (the item itself unless the list shows a stub).
 */
export function paginate<T>(
  items: readonly T[],
  options: PageOptions & {
    idOf: (item: T) => string;
    allowed?: (item: T) => boolean;
    expression?: Expression | undefined;
    datum?: (item: T) => Record<string, unknown>;
  },
): ListPage<T> {
  const reverse = options.reverse ?? false;
  const sorted = [...items].sort((a, b) => compareBytes(options.idOf(a), options.idOf(b)) * (reverse ? -1 : 1));
  const token = options.next_token ?? '';
  const perPage = options.per_page ?? 0;
  let tokenFound = token === '';
  const out: T[] = [];
  for (const item of sorted) {
    const id = options.idOf(item);
    const compared = compareBytes(id, token);
    if (!tokenFound && (reverse ? compared === 1 : compared === -1)) continue;
    if (options.expression) {
      let holds: boolean;
      try {
        holds = evaluateBexpr(options.expression, (options.datum?.(item) ?? item) as Record<string, unknown>);
      } catch (error) {
        if (error instanceof BexprEvaluationError) throw badRequest(`failed to read result page: ${error.message}`);
        throw error;
      }
      if (!holds) continue;
    }
    if (options.allowed && !options.allowed(item)) continue;
    tokenFound = true;
    if (perPage !== 0 && out.length + 1 > perPage) return new ListPage(out, id);
    out.push(item);
  }
  return new ListPage(out, '');
}
