import { readFileSync } from 'node:fs';
import { Aws, Duration, Fn } from 'aws-cdk-lib';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import {
  AllowedMethods,
  CachePolicy,
  Distribution,
  FunctionCode,
  FunctionEventType,
  FunctionRuntime,
  Function as CloudFrontFunction,
  OriginRequestPolicy,
  HeadersFrameOption,
  HeadersReferrerPolicy,
  PriceClass,
  ResponseHeadersPolicy,
  SecurityPolicyProtocol,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { FunctionUrlOrigin, HttpOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { CfnPermission, FunctionUrlAuthType, InvokeMode } from 'aws-cdk-lib/aws-lambda';
import { Api, type StackContext, use } from 'sst/constructs';
import { alarmOn, alarmThresholds, functionAlarms, httpApiAlarms, period } from './alarms.ts';
import { keyhavenFunction } from './functions.ts';
import { corsOf } from './stage-config.ts';
import { Storage } from './Storage.ts';
import { accessLogBucket, httpApiAccessLogFormat } from './access-logs.ts';
import { throttleApi, throttledSchedulerRoutes } from './throttling.ts';
import { schedulerWebAcl } from './waf.ts';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';

/** The stream ends this long before the function's 15-minute limit, so the client reconnects cleanly. */
const streamFunctionTimeoutMinutes = 15;
const streamLimitMs = (streamFunctionTimeoutMinutes - 1) * 60_000;

/**
 * CloudFront's wait for the first byte, then between bytes, of each origin. The HTTP API answers within its 30 s
 * integration limit (blocking queries within 25 s), so 35 s lets its own 504 reach the client; the stream sends a
 * heartbeat every 10 s, well inside 60 s.
 */
export const originReadTimeouts = { httpApi: Duration.seconds(35), eventStream: Duration.seconds(60) };

/** The viewer-request function of the stream route; relative to the project root, as SST runs (and handlers are). */
export const bearerToNomadTokenFile = 'stacks/cloudfront/bearer-to-nomad-token.js';

/**
 * `{scheduler_url}`: one CloudFront distribution. `/v1/event/stream` goes to a streaming Function URL
 * (`InvokeMode: RESPONSE_STREAM`, IAM auth, reachable only through CloudFront's origin access control);
 * every other path goes to an HTTP API in front of the buffered scheduler Lambda.
 */
export function SchedulerApi({ stack }: StackContext) {
  const storage = use(Storage);
  const { config } = storage;
  const apiFunction = keyhavenFunction(stack, 'Scheduler-api', storage, {
    handler: 'functions/scheduler/api.handler',
    description: 'keyhaven scheduler: ACL endpoints and blocking queries',
    reservedConcurrentExecutions: config.reservedConcurrency.schedulerApi,
    ...(storage.firstTokens ? { environment: { KEYHAVEN_FIRST_TOKENS_SECRET: storage.firstTokens.secret.secretArn } } : {}),
  });
  const streamFunction = keyhavenFunction(stack, 'Scheduler-event-stream', storage, {
    handler: 'functions/scheduler/event-stream.handler',
    description: 'keyhaven scheduler: /v1/event/stream (response stream)',
    timeout: `${streamFunctionTimeoutMinutes} minutes`,
    memorySize: '256 MB', // billed for every second a subscriber is connected; ~125 MB resident (test/bench/stream-cost.bench.ts)
    environment: { KEYHAVEN_STREAM_LIMIT_MS: String(streamLimitMs) },
    reservedConcurrentExecutions: config.reservedConcurrency.eventStream,
  });
  functionAlarms(stack, storage, 'Scheduler-api', apiFunction);
  functionAlarms(stack, storage, 'Scheduler-event-stream', streamFunction);
  const streamUrl = streamFunction.addFunctionUrl({ authType: FunctionUrlAuthType.AWS_IAM, invokeMode: InvokeMode.RESPONSE_STREAM });

  const api = new Api(stack, 'SchedulerHttpApi', {
    routes: {
      'ANY /v1/{proxy+}': { function: apiFunction },
      ...Object.fromEntries(Object.keys(throttledSchedulerRoutes).map((route) => [route, { function: apiFunction }])),
    },
    accessLog: { format: httpApiAccessLogFormat, retention: config.logRetention },
    cors: corsOf(config),
  });

  const uncached = {
    allowedMethods: AllowedMethods.ALLOW_ALL,
    cachePolicy: CachePolicy.CACHING_DISABLED,
    originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
    viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
    responseHeadersPolicy: new ResponseHeadersPolicy(stack, 'SchedulerSecurityHeaders', {
      comment: 'keyhaven scheduler: HSTS, nosniff, no framing, no referrer',
      securityHeadersBehavior: {
        strictTransportSecurity: { accessControlMaxAge: Duration.days(730), includeSubdomains: true, override: true },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: HeadersReferrerPolicy.NO_REFERRER, override: true },
      },
    }),
  };
  // OAC's signature replaces the viewer's Authorization header: a Bearer token is copied to X-Nomad-Token first.
  const bearerToNomadToken = new CloudFrontFunction(stack, 'BearerToNomadToken', {
    comment: 'copies Authorization: Bearer to X-Nomad-Token before origin access control signs the request',
    runtime: FunctionRuntime.JS_2_0,
    code: FunctionCode.fromInline(readFileSync(bearerToNomadTokenFile, 'utf8')),
  });
  const domain = config.customDomains?.scheduler;
  const distribution = new Distribution(stack, 'SchedulerDistribution', {
    comment: `keyhaven ${stack.stage} scheduler`,
    priceClass: PriceClass.PRICE_CLASS_100,
    // A CloudFront web ACL must live in us-east-1: deployed elsewhere, the distribution has none (README, Deploy).
    ...(stack.region === 'us-east-1' ? { webAclId: schedulerWebAcl(stack, stack.stage, RetentionDays[config.logRetention.toUpperCase() as keyof typeof RetentionDays]).attrArn } : {}),
    // Standard logs: every viewer request, with its IP, into a bucket of their own (no cookies: they are not used).
    enableLogging: true,
    logBucket: accessLogBucket(stack, 'SchedulerAccessLogs', config, 'cloudfront'),
    logFilePrefix: 'scheduler-distribution/',
    defaultBehavior: { origin: new HttpOrigin(Fn.select(2, Fn.split('/', api.url)), { readTimeout: originReadTimeouts.httpApi }), ...uncached },
    additionalBehaviors: {
      '/v1/event/stream': {
        origin: FunctionUrlOrigin.withOriginAccessControl(streamUrl, { readTimeout: originReadTimeouts.eventStream }),
        ...uncached,
        allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
        functionAssociations: [{ eventType: FunctionEventType.VIEWER_REQUEST, function: bearerToNomadToken }],
      },
    },
    ...(domain
      ? {
          domainNames: [domain.domainName],
          certificate: Certificate.fromCertificateArn(stack, 'SchedulerCertificate', domain.certificateArn),
          // Only a distribution with its own certificate can refuse TLS 1.0 and 1.1; *.cloudfront.net always accepts them.
          minimumProtocolVersion: SecurityPolicyProtocol.TLS_V1_2_2021,
        }
      : {}),
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
  // CloudFront publishes its metrics in us-east-1 only, and an alarm sees only its own region's metrics.
  if (stack.region === 'us-east-1') {
    // CloudFront publishes with both dimensions; CDK's metric names only the first, which matches no data.
    const dimensionsMap = { DistributionId: distribution.distributionId, Region: 'Global' };
    alarmOn(
      stack,
      storage,
      'SchedulerDistribution5xx',
      distribution.metric5xxErrorRate({ period, statistic: 'Average', dimensionsMap }),
      'keyhaven scheduler distribution: share of 5xx answers',
      { threshold: alarmThresholds.cloudFront5xxPercent, evaluationPeriods: alarmThresholds.cloudFrontPeriods },
    );
  }
  stack.addOutputs({ SchedulerUrl: domain ? `https://${domain.domainName}` : `https://${distribution.distributionDomainName}` });
  return { api, apiFunction, streamFunction, streamUrl, distribution };
}
