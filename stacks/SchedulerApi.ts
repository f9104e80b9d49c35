import { Duration, Fn } from 'aws-cdk-lib';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import {
  AllowedMethods,
  CachePolicy,
  Distribution,
  OriginRequestPolicy,
  PriceClass,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { FunctionUrlOrigin, HttpOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { FunctionUrlAuthType, InvokeMode } from 'aws-cdk-lib/aws-lambda';
import { Api, type StackContext, use } from 'sst/constructs';
import { keyhavenFunction } from './functions.ts';
import { Storage } from './Storage.ts';

/** The stream ends this long before the function's 15-minute limit, so the client reconnects cleanly. */
const streamFunctionTimeoutMinutes = 15;
const streamLimitMs = (streamFunctionTimeoutMinutes - 1) * 60_000;

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
  });
  const streamFunction = keyhavenFunction(stack, 'Scheduler-event-stream', storage, {
    handler: 'functions/scheduler/event-stream.handler',
    description: 'keyhaven scheduler: /v1/event/stream (response stream)',
    timeout: `${streamFunctionTimeoutMinutes} minutes`,
    memorySize: '256 MB', // billed for every second a subscriber is connected; ~125 MB resident (test/bench/stream-cost.bench.ts)
    environment: { KEYHAVEN_STREAM_LIMIT_MS: String(streamLimitMs) },
  });
  const streamUrl = streamFunction.addFunctionUrl({ authType: FunctionUrlAuthType.AWS_IAM, invokeMode: InvokeMode.RESPONSE_STREAM });

  const api = new Api(stack, 'SchedulerHttpApi', {
    routes: { 'ANY /v1/{proxy+}': { function: apiFunction } },
    accessLog: false,
  });

  const uncached = {
    allowedMethods: AllowedMethods.ALLOW_ALL,
    cachePolicy: CachePolicy.CACHING_DISABLED,
    originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
    viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
  };
  const domain = config.customDomains?.scheduler;
  const distribution = new Distribution(stack, 'SchedulerDistribution', {
    comment: `keyhaven ${stack.stage} scheduler`,
    priceClass: PriceClass.PRICE_CLASS_100,
    defaultBehavior: { origin: new HttpOrigin(Fn.select(2, Fn.split('/', api.url))), ...uncached },
    additionalBehaviors: {
      // The stream sends a heartbeat every few seconds, well inside CloudFront's 60 s read timeout.
      '/v1/event/stream': {
        origin: FunctionUrlOrigin.withOriginAccessControl(streamUrl, { readTimeout: Duration.seconds(60) }),
        ...uncached,
        allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
      },
    },
    ...(domain
      ? { domainNames: [domain.domainName], certificate: Certificate.fromCertificateArn(stack, 'SchedulerCertificate', domain.certificateArn) }
      : {}),
  });
  stack.addOutputs({ SchedulerUrl: domain ? `https://${domain.domainName}` : `https://${distribution.distributionDomainName}` });
  return { api, apiFunction, streamFunction, streamUrl, distribution };
}
