import { Api, type Function as SstFunction, type StackContext, use } from 'sst/constructs';
import { allSecretsFamilies, type SecretsFamily } from '../packages/core/src/secrets/families.ts';
import { Stack } from 'aws-cdk-lib';
import { Distribution, FunctionEventType, PriceClass } from 'aws-cdk-lib/aws-cloudfront';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { familyFunctionProps, keyhavenFunction } from './functions.ts';
import { alarmThresholds, distributionAlarm, functionAlarms, httpApiAlarms } from './alarms.ts';
import { consoleBehaviors, consoleBucket } from './console-hosting.ts';
import {
  cloudFrontFunction,
  httpApiOrigin,
  originSecret,
  uncachedApiBehavior,
  viewerCertificate,
} from './edge-origin.ts';
import { Edge } from './Edge.ts';
import { encryptLogGroups } from './logs-key.ts';
import {
  authTypes,
  corsOf,
  customOrigin,
  type DeclaredMount,
  declaredMountsEnv,
  familyOfType,
} from './stage-config.ts';
import { Storage } from './Storage.ts';
import { accessLogBucket, httpApiAccessLogFormat } from './access-logs.ts';
import { throttleApi, throttledSecretsRoutes } from './throttling.ts';

/** The viewer-request function of the API behaviour; relative to the project root, as SST runs (and handlers are). */
export const bearerToVaultTokenFile = 'stacks/cloudfront/bearer-to-vault-token.js';

/** The entry of every family's Lambda: the family is the one its `KEYHAVEN_FAMILY` names. */
export const familyHandler = 'functions/secrets/family.handler';

/** Family -> its Lambda's handler, for every family of the list (`packages/core/src/secrets/family-list.ts`). */
export const familyHandlers: Record<SecretsFamily, string> = Object.fromEntries(
  allSecretsFamilies.map((family) => [family, familyHandler]),
) as Record<SecretsFamily, string>;

/** Routes for one mount path: the path itself and everything under it, every method (`GET ?list=true` included). */
export const mountRoutes = (path: string) => [`ANY /v1/${path}`, `ANY /v1/${path}/{proxy+}`];

/** Route key -> family: the built-ins on `system`, each declared mount on its type's family. */
export function secretsRoutes(mounts: DeclaredMount[]): Record<string, SecretsFamily> {
  const routes: Record<string, SecretsFamily> = {};
  for (const path of ['sys', 'auth/token', 'identity']) for (const route of mountRoutes(path)) routes[route] = 'system';
  for (const mount of mounts) {
    const family = familyOfType[mount.type];
    if (!family) throw new Error(`no family serves mount type ${mount.type}`);
    for (const route of mountRoutes(mount.path)) routes[route] = family;
  }
  return routes;
}

/** The family of the mount catch-all (`ANY /v1/<mount>/{proxy+}`) a more specific route lies under. */
function familyOfRoute(route: string, routes: Record<string, SecretsFamily>): SecretsFamily {
  const path = route.replace(/^ANY \/v1\//, '');
  const owner = Object.keys(routes)
    .filter(
      (key) => key.endsWith('/{proxy+}') && path.startsWith(`${key.slice('ANY /v1/'.length, -'{proxy+}'.length)}`),
    )
    .sort((a, b) => b.length - a.length)[0];
  const family = owner ? routes[owner] : undefined;
  if (!family) throw new Error(`no mount serves ${route}`);
  return family;
}

/**
 * The synchronous call budget, inside API Gateway's 30 s integration limit (`apiLimit`): the system function runs up to
 * `system` seconds, and while answering it may invoke an engine's function and wait for it (lease revocation, a
 * mount's disable), so every engine function stops after `engine` seconds, leaving the system function `system -
 * engine` seconds (a cold start of the engine, then its own answer) before the limit. An engine request that needs
 * longer fails at `engine` seconds (Lambda's timeout) instead of at the API's limit.
 */
export const callBudgetSeconds = { apiLimit: 30, system: 28, engine: 20 } as const;

/**
 * `{base_url}`: one CloudFront distribution (WAF, standard logs, security headers, TLS 1.2 with the stage's own name)
 * in front of an HTTP API whose routes are the stage's declared mounts, each to its family's Lambda, and the web
 * console under `/ui/` from a private bucket. Only families with a declared mount (and `system`) get a function. The
 * API's own URL answers 403 (the origin check).
 */
export function SecretsApi({ stack }: StackContext) {
  const storage = use(Storage);
  const { config } = storage;
  const edge = use(Edge);
  const origin = originSecret(stack, 'Secrets', stack.stage, config);
  const routes = secretsRoutes(config.mounts);
  // The login and credential routes, each to its mount's family, so API Gateway can throttle them on their own.
  const throttled = throttledSecretsRoutes(config.mounts);
  for (const route of Object.keys(throttled)) routes[route] = familyOfRoute(route, routes);
  const environment = {
    KEYHAVEN_DECLARED_MOUNTS: declaredMountsEnv(config.mounts),
    KEYHAVEN_ORIGIN_SECRET: origin.value,
  };
  const functions = new Map<SecretsFamily, SstFunction>();
  for (const family of new Set(Object.values(routes))) {
    functions.set(
      family,
      keyhavenFunction(stack, `Secrets-${family}`, storage, {
        handler: familyHandlers[family],
        description: `keyhaven secrets: ${family} endpoints`,
        timeout: family === 'system' ? `${callBudgetSeconds.system} seconds` : `${callBudgetSeconds.engine} seconds`,
        // Its backends' deployment: the directory's network, the cloud's Google endpoints.
        ...familyFunctionProps(stack, config, family, { ...environment, KEYHAVEN_FAMILY: family }),
      }),
    );
  }
  grantRevocation(functions, config.mounts);
  for (const [family, fn] of functions) functionAlarms(stack, storage, `Secrets-${family}`, fn);
  if (storage.firstTokens)
    functions.get('system')?.addEnvironment('KEYHAVEN_FIRST_TOKENS_SECRET', storage.firstTokens.secret.secretArn);
  const api = new Api(stack, 'SecretsApi', {
    routes: Object.fromEntries(
      Object.entries(routes).map(([route, family]) => [route, { function: functions.get(family) as SstFunction }]),
    ),
    // Access log: no header and no query string, so no token reaches it (the path names no secret value).
    accessLog: { format: httpApiAccessLogFormat, retention: config.logRetention },
    cors: corsOf(config),
  });
  throttleApi(api, config.throttle, throttled);
  httpApiAlarms(stack, storage, 'SecretsApi', api, alarmThresholds.secretsLatencyP99Ms);

  const domain = config.customDomains?.secrets;
  const bucket = consoleBucket(stack, config);
  const distribution = new Distribution(stack, 'SecretsDistribution', {
    comment: `keyhaven ${stack.stage} secrets`,
    priceClass: PriceClass.PRICE_CLASS_100,
    ...(edge.webAclArn ? { webAclId: edge.webAclArn } : {}),
    // Standard logs: every viewer request, with its IP, into a bucket of their own (no cookies: they are not used).
    enableLogging: true,
    logBucket: accessLogBucket(stack, 'SecretsAccessLogs', config, 'cloudfront'),
    logFilePrefix: 'secrets-distribution/',
    defaultBehavior: {
      origin: httpApiOrigin(api, origin.value),
      ...uncachedApiBehavior(
        stack,
        'SecretsSecurityHeaders',
        'keyhaven secrets: HSTS, nosniff, no framing, no referrer',
      ),
      functionAssociations: [
        {
          eventType: FunctionEventType.VIEWER_REQUEST,
          function: cloudFrontFunction(
            stack,
            'BearerToVaultToken',
            'copies Authorization: Bearer to X-Vault-Token, which CloudFront would drop from GET and HEAD',
            bearerToVaultTokenFile,
          ),
        },
      ],
    },
    additionalBehaviors: consoleBehaviors(stack, bucket, config),
    ...viewerCertificate(stack, 'SecretsCertificate', domain),
  });
  distributionAlarm(stack, storage, 'SecretsDistribution', distribution);
  encryptLogGroups(stack, storage.logsKey);
  const url = customOrigin(domain) ?? `https://${distribution.distributionDomainName}`;
  stack.addOutputs({ SecretsUrl: url, SecretsDistributionDomain: distribution.distributionDomainName });
  return { api, functions, distribution, url, consoleBucket: bucket, originSecret: origin.secret };
}

/**
 * The system function (`sys/leases/revoke`, token revocation) revokes an engine's lease by invoking that engine's
 * function and waiting, as Vault's revocation is synchronous: it gets their names (`KEYHAVEN_ENGINE_FUNCTIONS`,
 * mount type -> function) and may invoke those functions, nothing else.
 */
function grantRevocation(functions: Map<SecretsFamily, SstFunction>, mounts: DeclaredMount[]): void {
  const system = functions.get('system');
  const engines: Record<string, SstFunction> = {};
  for (const mount of mounts) {
    // An engine's (not a login method's: its tokens are revoked by the system function itself).
    const family = familyOfType[mount.type];
    const fn = family && !authTypes.has(mount.type) ? functions.get(family) : undefined;
    if (fn) engines[mount.type] = fn;
  }
  if (!system || Object.keys(engines).length === 0) return;
  const names = Object.fromEntries(Object.entries(engines).map(([type, fn]) => [type, fn.functionName]));
  system.addEnvironment('KEYHAVEN_ENGINE_FUNCTIONS', Stack.of(system).toJsonString(names));
  system.attachPermissions([
    new PolicyStatement({
      actions: ['lambda:InvokeFunction'],
      resources: [...new Set(Object.values(engines))].map((fn) => fn.functionArn),
    }),
  ]);
}
