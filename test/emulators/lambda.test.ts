import { InvokeCommand, LambdaClient, ResourceNotFoundException } from '@aws-sdk/client-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LambdaEmulator, startLambdaEmulator } from './lambda.ts';

/** The Lambda Invoke emulator, driven by the real SDK client as the system function drives it. */
describe('Lambda Invoke emulator', () => {
  let emulator: LambdaEmulator;
  let client: LambdaClient;
  const seen: unknown[] = [];

  beforeAll(async () => {
    emulator = await startLambdaEmulator({
      echo: async (event) => ({ got: event }),
      fails: async () => {
        throw new TypeError('no such lease');
      },
      records: async (event) => {
        seen.push(event);
        return null;
      },
    });
    client = new LambdaClient({
      endpoint: emulator.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  });
  afterAll(async () => {
    client?.destroy();
    await emulator?.stop();
  });

  const invoke = (input: {
    FunctionName: string;
    Payload?: string;
    InvocationType?: 'RequestResponse' | 'Event' | 'DryRun';
  }) =>
    client.send(
      new InvokeCommand({
        ...input,
        ...(input.Payload !== undefined ? { Payload: new TextEncoder().encode(input.Payload) } : {}),
      }),
    );
  const decoded = (payload: Uint8Array | undefined) => JSON.parse(new TextDecoder().decode(payload));

  it('answers a RequestResponse invocation with the handler result, by name or by ARN with a qualifier', async () => {
    const byName = await invoke({ FunctionName: 'echo', Payload: '{"a":1}' });
    expect(byName.StatusCode).toBe(200);
    expect(byName.FunctionError).toBeUndefined();
    expect(byName.ExecutedVersion).toBe('$LATEST');
    expect(decoded(byName.Payload)).toEqual({ got: { a: 1 } });
    const byArn = await invoke({
      FunctionName: 'arn:aws:lambda:us-east-1:123456789012:function:echo:$LATEST',
      Payload: '[2]',
    });
    expect(decoded(byArn.Payload)).toEqual({ got: [2] });
    expect(emulator.invocations.slice(-2).map((call) => call.functionName)).toEqual(['echo', 'echo']);
  });

  it("reports a thrown error as FunctionError Unhandled with the Node runtime's payload", async () => {
    const out = await invoke({ FunctionName: 'fails', Payload: '{}' });
    expect(out.StatusCode).toBe(200);
    expect(out.FunctionError).toBe('Unhandled');
    expect(decoded(out.Payload)).toMatchObject({ errorType: 'TypeError', errorMessage: 'no such lease' });
  });

  it('runs an Event invocation after answering 202, and a DryRun not at all', async () => {
    const queued = await invoke({ FunctionName: 'records', Payload: '{"n":1}', InvocationType: 'Event' });
    expect(queued.StatusCode).toBe(202);
    await expect.poll(() => seen).toEqual([{ n: 1 }]);
    const dry = await invoke({ FunctionName: 'records', Payload: '{"n":2}', InvocationType: 'DryRun' });
    expect(dry.StatusCode).toBe(204);
    expect(seen).toEqual([{ n: 1 }]);
  });

  it('refuses an unknown function and a payload that is not JSON', async () => {
    await expect(invoke({ FunctionName: 'nope', Payload: '{}' })).rejects.toBeInstanceOf(ResourceNotFoundException);
    await expect(invoke({ FunctionName: 'echo', Payload: 'not json' })).rejects.toMatchObject({
      name: 'InvalidRequestContentException',
    });
  });
});
