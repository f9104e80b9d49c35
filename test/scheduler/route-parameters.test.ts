import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { webApp } from '../../packages/core/src/http/web-app.ts';
import { answerRoute, exchangeOf, route } from '../../packages/core/src/scheduler/http/route.ts';

/**
 * The route wrapper parses a row's declared path and query parameters before its handler runs: the handler gets the
 * schemas' outputs, and a bad value is a 400 naming the parameter (a schema's own message as it is; zod's wording
 * prefixed with the parameter otherwise). The ACL rows' own messages are asserted in names-and-ids.test.ts.
 */
describe('scheduler route wrapper: declared params and query are validated before the handler', () => {
  const seen: unknown[] = [];
  const rows = [
    route({
      method: 'GET',
      path: '/v1/test/item/:slot',
      summary: 'A test row.',
      access: 'anyone',
      params: { slot: z.coerce.number().check(z.int(), z.minimum(1), z.describe('A slot number.')) },
      query: {
        size: z.optional(z.coerce.number().check(z.int())).check(z.describe('A size.')),
        tag: z
          .optional(
            z.array(z.string().check(z.regex(/^[a-z]+$/, { error: (issue) => `bad tag "${String(issue.input)}"` }))),
          )
          .check(z.describe('Tags.')),
      },
      returns: 'What the handler saw.',
      handler: async ({ params, query }) => {
        seen.push({ params, query });
        return { json: { slot: params.slot + 1, size: query.size ?? null, tags: query.tag ?? [] } };
      },
    }),
  ];
  // The route table alone (its rows read nothing of a scheduler), served in process.
  const app = webApp((request) => answerRoute(rows, exchangeOf(request, decodeURIComponent(request.path), undefined)));
  const get = async (url: string) => {
    const response = await app.request(url);
    return { status: response.status, text: await response.text() };
  };

  it('hands the handler typed values (numbers coerced, a repeated query parameter as a list)', async () => {
    expect(await get('/v1/test/item/4?size=10&tag=a&tag=b')).toEqual({
      status: 200,
      text: '{"slot":5,"size":10,"tags":["a","b"]}',
    });
    expect(await get('/v1/test/item/1')).toEqual({ status: 200, text: '{"slot":2,"size":null,"tags":[]}' });
  });

  it('answers a bad value with a 400 that names the parameter; the handler never runs', async () => {
    const before = seen.length;
    expect(await get('/v1/test/item/zero')).toEqual({
      status: 400,
      text: 'invalid path parameter slot: Invalid input: expected number, received NaN',
    });
    expect(await get('/v1/test/item/0')).toEqual({
      status: 400,
      text: 'invalid path parameter slot: Too small: expected number to be >=1',
    });
    expect(await get('/v1/test/item/2?size=1.5')).toEqual({
      status: 400,
      text: 'invalid query parameter size: Invalid input: expected int, received number',
    });
    expect(await get('/v1/test/item/2?tag=ok&tag=NOT')).toEqual({ status: 400, text: 'bad tag "NOT"' });
    expect(seen.length).toBe(before);
  });
});
