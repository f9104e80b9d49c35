import { type AskEngine, type Core, type CoreOptions, createCore } from '../composition/secrets-core.ts';
import { sharedUntilRejected } from '../lib/shared-until-rejected.ts';
import { dynamoDbClient, keySource, localEndpoint, tableName } from './shared-core-from-environment.ts';

/**
 * The core as a deployed function builds it from its environment: `KEYHAVEN_TABLE`, and either
 * `KEYHAVEN_KMS_KEY_ID` (AWS) or `KEYHAVEN_KEY_FILE` (a laptop). `KEYHAVEN_DYNAMODB_ENDPOINT` and
 * `KEYHAVEN_KMS_ENDPOINT` point the SDK at local stand-ins.
 */
export function coreFromEnvironment(backends: CoreOptions['backends'], env = process.env): () => Promise<Core> {
  return sharedUntilRejected(() =>
    createCore({
      dynamodb: dynamoDbClient(env.KEYHAVEN_DYNAMODB_ENDPOINT),
      tableName: tableName(env),
      keySource: keySource(env),
      backends,
      ...(env.KEYHAVEN_DECLARED_MOUNTS ? { declaredMounts: declaredMounts(env.KEYHAVEN_DECLARED_MOUNTS) } : {}),
      ...(env.KEYHAVEN_ENGINE_FUNCTIONS
        ? { askEngine: askThroughLambda(env.KEYHAVEN_ENGINE_FUNCTIONS, env.KEYHAVEN_LAMBDA_ENDPOINT) }
        : {}),
    }),
  );
}

/** `KEYHAVEN_DECLARED_MOUNTS`: the stage's mounts as the stacks route them, `[{"path":"ldap/","type":"ldap"}]`. */
function declaredMounts(json: string): Array<{ path: string; type: string }> {
  const parsed: unknown = JSON.parse(json);
  const valid =
    Array.isArray(parsed) &&
    parsed.every(
      (mount) => typeof mount?.path === 'string' && mount.path.endsWith('/') && typeof mount?.type === 'string',
    );
  if (!valid) throw new Error('KEYHAVEN_DECLARED_MOUNTS must be a JSON list of {"path": "<path>/", "type": "<type>"}');
  return parsed;
}

/**
 * `KEYHAVEN_ENGINE_FUNCTIONS` (`{"ldap": "<function name>", …}`): the system function has an engine it does not
 * bundle revoke leases or finish a disable by invoking that engine's function and waiting (`EngineEvent` in
 * functions/secrets/app.ts).
 * `KEYHAVEN_LAMBDA_ENDPOINT` points the client at a local stand-in. The Lambda client is loaded on first use.
 */
function askThroughLambda(json: string, endpoint: string | undefined): AskEngine {
  const parsed: unknown = JSON.parse(json);
  const valid =
    typeof parsed === 'object' && parsed !== null && Object.values(parsed).every((name) => typeof name === 'string');
  if (!valid) throw new Error('KEYHAVEN_ENGINE_FUNCTIONS must be a JSON object of mount type -> function name');
  const functions = parsed as Record<string, string>;
  let client:
    | Promise<{ invoke: (name: string, payload: string) => Promise<{ error?: string; payload: string }> }>
    | undefined;
  const lambda = () =>
    (client ??= import('@aws-sdk/client-lambda').then(({ InvokeCommand, LambdaClient }) => {
      const sdk = new LambdaClient(endpoint ? localEndpoint(endpoint) : {});
      return {
        invoke: async (name: string, payload: string) => {
          const out = await sdk.send(
            new InvokeCommand({ FunctionName: name, Payload: new TextEncoder().encode(payload) }),
          );
          return {
            ...(out.FunctionError ? { error: out.FunctionError } : {}),
            payload: new TextDecoder().decode(out.Payload),
          };
        },
      };
    }));
  return async (mountType, request) => {
    const name = functions[mountType];
    if (!name) return false;
    const answer = await (await lambda()).invoke(name, JSON.stringify({ keyhaven: request }));
    if (answer.error) {
      const message = (JSON.parse(answer.payload || '{}') as { errorMessage?: string }).errorMessage;
      throw new Error(`the ${mountType} function failed: ${message ?? answer.error}`);
    }
    return true;
  };
}
