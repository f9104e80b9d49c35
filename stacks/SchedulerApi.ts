import { Aws, Duration } from 'aws-cdk-lib';
import { AllowedMethods, Distribution, FunctionEventType, PriceClass } from 'aws-cdk-lib/aws-cloudfront';
import { FunctionUrlOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { type CfnFunction, CfnPermission, FunctionUrlAuthType, InvokeMode } from 'aws-cdk-lib/aws-lambda';
import { Api, type StackContext, use } from 'sst/constructs';
import { alarmThresholds, distributionAlarm, functionAlarms, httpApiAlarms } from './alarms.ts';
import { hclParserFiles, keyhavenFunction } from './functions.ts';
import {
  cloudFrontFunction,
  httpApiOrigin,
  httpApiReadTimeout,
  originSecret,
  uncachedApiBehavior,
  viewerCertificate,
} from './edge-origin.ts';
import { Edge } from './Edge.ts';
import { encryptLogGroups } from './logs-key.ts';
import { corsOf, customOrigin } from './stage-config.ts';
import { SecretsApi } from './SecretsApi.ts';
import { Storage } from './Storage.ts';
import { accessLogBucket, httpApiAccessLogFormat } from './access-logs.ts';
import { throttleApi, throttledSchedulerRoutes } from './throttling.ts';

/**
 * JSON logs with Lambda's own lines (START, END, REPORT) only at WARN: at one invocation per heartbeat they would be
 * most of the log bill (~0.3 kB each; docs/performance.md). The function's own lines stay at INFO; its duration and
 * errors remain in CloudWatch metrics and the alarms.
 */
function quietPlatformLogs(fn: { node: { defaultChild?: unknown } }): void {
  (fn.node.defaultChild as CfnFunction).loggingConfig = {
    logFormat: 'JSON',
    systemLogLevel: 'WARN',
    applicationLogLevel: 'INFO',
  };
}

/** The stream ends this long before the function's 15-minute limit, so the client reconnects cleanly. */
const streamFunctionTimeoutMinutes = 15;
const streamLimitMs = (streamFunctionTimeoutMinutes - 1) * 60_000;

/**
 * CloudFront's wait for the first byte, then between bytes, of each origin. The HTTP API answers within its 30 s
 * integration limit (blocking queries within 25 s), so 35 s lets its own 504 reach the client; the stream sends a
 * heartbeat every 10 s, well inside 60 s.
 */
export const originReadTimeouts = { httpApi: httpApiReadTimeout, eventStream: Duration.seconds(60) };

/** The viewer-request function of both behaviours; relative to the project root, as SST runs (and handlers are). */
export const bearerToNomadTokenFile = 'stacks/cloudfront/bearer-to-nomad-token.js';

/**
 * `{scheduler_url}`: one CloudFront distribution. `/v1/event/stream` goes to a streaming Function URL
 * (`InvokeMode: RESPONSE_STREAM`, IAM auth, reachable only through CloudFront's origin access control);
 * every other path goes to an HTTP API in front of the buffered scheduler Lambda. Beside it, the client protocol's
 * own function (`Scheduler-client`, 128 MB) on a public Function URL (`SchedulerClientUrl`), which the agents call
 * directly: at one request per heartbeat, CloudFront and API Gateway would each cost more than the function
 * (docs/performance.md, "A cluster's bill"; what that URL exposes: docs/security.md).
 */
export function SchedulerApi({ stack }: StackContext) {
  const storage = use(Storage);
  const { config } = storage;
  const edge = use(Edge);
  // The console is served by the secrets distribution and calls this service from there (CORS): its origin is the
  // secrets service's own name (a plain string), or its CloudFront name on a dev stage without one (a reference).
  const consoleOrigin = use(SecretsApi).url;
  // The origin check: the API's own execute-api URL answers 403 (functions/scheduler/origin-check.ts).
  const origin = originSecret(stack, 'Scheduler', stack.stage, config);
  const apiFunction = keyhavenFunction(stack, 'Scheduler-api', storage, {
    handler: 'functions/scheduler/api.handler',
    description: 'keyhaven scheduler: ACL endpoints and blocking queries',
    reservedConcurrentExecutions: config.reservedConcurrency.schedulerApi,
    copyFiles: hclParserFiles,
    environment: {
      KEYHAVEN_ORIGIN_SECRET: origin.value,
      KEYHAVEN_CONSOLE_ORIGINS: consoleOrigin,
      ...(storage.firstTokens ? { KEYHAVEN_FIRST_TOKENS_SECRET: storage.firstTokens.secret.secretArn } : {}),
    },
  });
  const streamFunction = keyhavenFunction(stack, 'Scheduler-event-stream', storage, {
    handler: 'functions/scheduler/event-stream.handler',
    description: 'keyhaven scheduler: /v1/event/stream (response stream)',
    timeout: `${streamFunctionTimeoutMinutes} minutes`,
    memorySize: '256 MB', // billed for every second a subscriber is connected; ~125 MB resident (test/bench/stream-cost.bench.ts)
    environment: { KEYHAVEN_STREAM_LIMIT_MS: String(streamLimitMs), KEYHAVEN_CONSOLE_ORIGINS: consoleOrigin },
    reservedConcurrentExecutions: config.reservedConcurrency.eventStream,
  });
  // The client protocol on its own function and Function URL (the agents' heartbeats): functions/scheduler/client.ts.
  const clientFunction = keyhavenFunction(stack, 'Scheduler-client', storage, {
    handler: 'functions/scheduler/client.handler',
    description: 'keyhaven scheduler: the client protocol (node registration, heartbeats) on its Function URL',
    // A beat is one conditional write: 128 MB does it in ~10 ms (docs/performance.md, "A cluster's bill").
    memorySize: '128 MB',
    reservedConcurrentExecutions: config.reservedConcurrency.schedulerClient,
  });
  quietPlatformLogs(clientFunction);
  const clientUrl = clientFunction.addFunctionUrl({ authType: FunctionUrlAuthType.NONE });
  functionAlarms(stack, storage, 'Scheduler-client', clientFunction);
  functionAlarms(stack, storage, 'Scheduler-api', apiFunction);
  functionAlarms(stack, storage, 'Scheduler-event-stream', streamFunction);
  const streamUrl = streamFunction.addFunctionUrl({
    authType: FunctionUrlAuthType.AWS_IAM,
    invokeMode: InvokeMode.RESPONSE_STREAM,
  });

  // With corsOrigins set, API Gateway answers CORS itself (and drops the function's CORS headers), so the console's
  // origin must be among them; without, the function answers CORS for KEYHAVEN_CONSOLE_ORIGINS.
  const cors =
    config.corsOrigins.length > 0
      ? corsOf({ ...config, corsOrigins: [...config.corsOrigins, consoleOrigin] })
      : corsOf(config);
  const api = new Api(stack, 'SchedulerHttpApi', {
    routes: {
      'ANY /v1/{proxy+}': { function: apiFunction },
      ...Object.fromEntries(Object.keys(throttledSchedulerRoutes).map((route) => [route, { function: apiFunction }])),
    },
    accessLog: { format: httpApiAccessLogFormat, retention: config.logRetention },
    cors,
  });

  const uncached = uncachedApiBehavior(
    stack,
    'SchedulerSecurityHeaders',
    'keyhaven scheduler: HSTS, nosniff, no framing, no referrer',
  );
  // CloudFront drops Authorization from GET and HEAD (the API), and OAC's signature replaces it (the stream): a
  // Bearer token is copied to X-Nomad-Token first.
  const bearerToNomadToken = [
    {
      eventType: FunctionEventType.VIEWER_REQUEST,
      function: cloudFrontFunction(
        stack,
        'BearerToNomadToken',
        'copies Authorization: Bearer to X-Nomad-Token before CloudFront drops it or origin access control signs the request',
        bearerToNomadTokenFile,
      ),
    },
  ];
  const domain = config.customDomains?.scheduler;
  const distribution = new Distribution(stack, 'SchedulerDistribution', {
    comment: `keyhaven ${stack.stage} scheduler`,
    priceClass: PriceClass.PRICE_CLASS_100,
    // The stage's web ACL (stacks/Edge.ts): made in us-east-1, named by the stage config elsewhere.
    ...(edge.webAclArn ? { webAclId: edge.webAclArn } : {}),
    // Standard logs: every viewer request, with its IP, into a bucket of their own (no cookies: they are not used).
    enableLogging: true,
    logBucket: accessLogBucket(stack, 'SchedulerAccessLogs', config, 'cloudfront'),
    logFilePrefix: 'scheduler-distribution/',
    defaultBehavior: {
      origin: httpApiOrigin(api, origin.value),
      ...uncached,
      functionAssociations: bearerToNomadToken,
    },
    additionalBehaviors: {
      '/v1/event/stream': {
        origin: FunctionUrlOrigin.withOriginAccessControl(streamUrl, { readTimeout: originReadTimeouts.eventStream }),
        ...uncached,
        // OPTIONS for the console's CORS preflight (it sends X-Nomad-Token).
        allowedMethods: AllowedMethods.ALLOW_GET_HEAD_OPTIONS,
        functionAssociations: bearerToNomadToken,
      },
    },
    ...viewerCertificate(stack, 'SchedulerCertificate', domain),
  });
  // Function URLs created since October 2025 need lambda:InvokeFunction (via the Function URL) beside the
  // lambda:InvokeFunctionUrl that FunctionUrlOrigin.withOriginAccessControl grants (aws-cdk issue 35872); both only
  // for this distribution.
  new CfnPermission(stack, 'StreamInvokeFromDistribution', {
    principal: 'cloudfront.amazonaws.com',
    action: 'lambda:InvokeFunction',
    functionName: streamUrl.functionArn,
    sourceArn: `arn:${Aws.PARTITION}:cloudfront::${Aws.ACCOUNT_ID}:distribution/${distribution.distributionId}`,
    invokedViaFunctionUrl: true,
  });
  throttleApi(api, config.throttle, throttledSchedulerRoutes);
  httpApiAlarms(stack, storage, 'SchedulerHttpApi', api, alarmThresholds.schedulerLatencyP99Ms);
  distributionAlarm(stack, storage, 'SchedulerDistribution', distribution);
  encryptLogGroups(stack, storage.logsKey);
  const url = customOrigin(domain) ?? `https://${distribution.distributionDomainName}`;
  stack.addOutputs({
    SchedulerUrl: url,
    SchedulerDistributionDomain: distribution.distributionDomainName,
    // Where agents send the client protocol (`keyhaven-agent -servers`): register, heartbeats, node events.
    SchedulerClientUrl: clientUrl.url,
  });
  return {
    api,
    apiFunction,
    streamFunction,
    streamUrl,
    clientFunction,
    clientUrl,
    distribution,
    originSecret: origin.secret,
    url,
  };
}
