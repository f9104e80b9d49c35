import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { publishEvents } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { standInAwsLambda } from '../deploy/lambda-events.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

const metadata = standInAwsLambda();

describe('functions/scheduler/event-stream.ts (Lambda response stream)', () => {
  let h: SchedulerHarness;
  let root: string;

  beforeAll(async () => {
    h = await startScheduler();
    root = await h.bootstrap();
    process.env.KEYHAVEN_TABLE = h.tableName;
    process.env.KEYHAVEN_KEY_FILE = h.keyFile;
    process.env.KEYHAVEN_DYNAMODB_ENDPOINT = inject('dynamoEndpoint');
    process.env.KEYHAVEN_STREAM_LIMIT_MS = '1500';
  });
  afterAll(() => h.close());

  it('streams NDJSON from the backlog and ends before the time limit, so the client reconnects with the last index', async () => {
    // The function reads the real clock: bring the test's clock to now so the event is still in the buffer.
    h.clock.advance(Math.max(0, (Date.now() - h.clock.now()) / 1000));
    const start = await h.scheduler.state.currentIndex();
    const published = await publishEvents(h.core, [
      {
        Topic: 'Node',
        Type: 'NodeRegistration',
        Key: 'n1',
        Namespace: '',
        FilterKeys: null,
        Payload: { Node: { ID: 'n1' } },
      },
    ]);
    const { handler } = await import('../../functions/scheduler/event-stream.ts');
    const chunks: Buffer[] = [];
    const sink = new Writable({
      write(chunk, _encoding, callback) {
        chunks.push(Buffer.from(chunk));
        callback();
      },
    });
    const finished = new Promise<void>((resolve) => sink.on('finish', () => resolve()));
    const event = {
      version: '2.0',
      routeKey: '$default',
      rawPath: '/v1/event/stream',
      rawQueryString: `index=${start}&topic=Node`,
      headers: { 'x-scheduler-token': root, host: 'lambda.example' },
      queryStringParameters: { index: String(start), topic: 'Node' },
      requestContext: {
        http: { method: 'GET', path: '/v1/event/stream', sourceIp: '10.0.0.1' },
        domainName: 'lambda.example',
      },
      isBase64Encoded: false,
    };
    await (handler as unknown as (event: unknown, stream: Writable, context: unknown) => Promise<void>)(
      event,
      sink,
      {},
    );
    await finished;
    const lines = Buffer.concat(chunks)
      .toString('utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines[0]).toEqual({});
    const withEvents = lines.filter((line) => line.Index !== undefined);
    expect(withEvents).toHaveLength(1);
    expect(withEvents[0]).toMatchObject({ Index: published, Events: [{ Topic: 'Node', Key: 'n1' }] });
    expect(metadata[0]).toMatchObject({ statusCode: 200 });
  });
});
