import { Duration, RemovalPolicy, Stack as CdkStack } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, type IMetric, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { type ITopic, Subscription, SubscriptionProtocol, Topic } from 'aws-cdk-lib/aws-sns';
import type { Distribution } from 'aws-cdk-lib/aws-cloudfront';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Api, Function as SstFunction } from 'sst/constructs';
import type { Construct, IConstruct } from 'constructs';
import { checkAlarmSubscriptions } from './stage-checks.ts';
import type { StageConfig } from './stage-schema.ts';

/** What an alarm needs: the stage config and the stage's alarm topic (made by the Storage stack, `alarmTopic`). */
export interface AlarmContext {
  config: StageConfig;
  alarmTopic: ITopic;
}

/** The alarm names of the app, in the order they were made; the Operations stack's dashboard shows them all. */
const alarmNamesOfApp = new WeakMap<IConstruct, string[]>();
export const alarmNamesOf = (scope: Construct): string[] => alarmNamesOfApp.get(scope.node.root) ?? [];

/** A stage's alarm name: `keyhaven-<stage>-<id>` (alarm names are per account and region). */
export const alarmName = (stage: string, id: string) => `keyhaven-${stage}-${id}`;

const stageOf = (scope: Construct) => (CdkStack.of(scope) as CdkStack & { stage: string }).stage;

/**
 * The stage's alarm topic: an SNS topic this stack makes (encrypted with its own key, which CloudWatch may use to
 * publish; TLS only), subscribed to each of the stage config's `alarmSubscriptions`. A stage outside dev without any
 * subscription fails to synthesise (`checkAlarmSubscriptions`): its alarms would reach nobody. A notification SNS
 * cannot deliver to a subscription after its retries goes to a dead-letter queue (each subscription's redrive
 * policy), kept 14 days and watched by an alarm (`AlarmDeliveryFailures`), which the dashboard shows.
 */
export function alarmTopic(scope: Construct, config: StageConfig): ITopic {
  const stage = stageOf(scope);
  checkAlarmSubscriptions(stage, config);
  const key = new Key(scope, 'AlarmTopicKey', {
    description: `keyhaven ${stage}: encrypts the alarm topic`,
    enableKeyRotation: true,
    removalPolicy: config.isDev ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
  });
  key.addToResourcePolicy(
    new PolicyStatement({
      sid: 'CloudWatchPublishesAlarms',
      principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
      actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
      resources: ['*'],
    }),
  );
  const topic = new Topic(scope, 'AlarmTopic', {
    topicName: `keyhaven-${stage}-alarms`,
    displayName: `keyhaven ${stage} alarms`,
    masterKey: key,
    enforceSSL: true,
  });
  const protocols = {
    email: SubscriptionProtocol.EMAIL,
    https: SubscriptionProtocol.HTTPS,
    sms: SubscriptionProtocol.SMS,
  } as const;
  // SQS-managed encryption: SNS can send to it without a key policy of its own.
  const undelivered = new Queue(scope, 'AlarmDeliveryFailuresQueue', {
    queueName: `keyhaven-${stage}-alarm-delivery-failures`,
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
  config.alarmSubscriptions.forEach((subscription, index) => {
    new Subscription(scope, `AlarmSubscription${index}`, {
      topic,
      protocol: protocols[subscription.protocol],
      endpoint: subscription.endpoint,
      deadLetterQueue: undelivered,
    });
  });
  alarmOn(
    scope,
    { config, alarmTopic: topic },
    'AlarmDeliveryFailures',
    undelivered.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' }),
    `keyhaven alarms: SNS could not deliver a notification to a subscription (queue keyhaven-${stage}-alarm-delivery-failures)`,
  );
  return topic;
}

export interface AlarmOptions {
  /** Default 1. */
  threshold?: number;
  /** Consecutive periods over the threshold before the alarm fires; default 1. */
  evaluationPeriods?: number;
  /** Default `>=`. */
  comparisonOperator?: ComparisonOperator;
}

/**
 * One alarm per condition that needs a person. By default it fires on one occurrence in a 5-minute period and is OK
 * when there is no data. Every alarm notifies the stage's alarm topic when it fires and when it is OK again.
 */
export function alarmOn(
  scope: Construct,
  context: AlarmContext,
  id: string,
  metric: IMetric,
  description: string,
  options: AlarmOptions = {},
): Alarm {
  const name = alarmName(stageOf(scope), id);
  const alarm = new Alarm(scope, id, {
    alarmName: name,
    metric,
    threshold: options.threshold ?? 1,
    evaluationPeriods: options.evaluationPeriods ?? 1,
    comparisonOperator: options.comparisonOperator ?? ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: TreatMissingData.NOT_BREACHING,
    alarmDescription: description,
  });
  alarm.addAlarmAction(new SnsAction(context.alarmTopic));
  alarm.addOkAction(new SnsAction(context.alarmTopic));
  const names = alarmNamesOfApp.get(scope.node.root) ?? [];
  names.push(name);
  alarmNamesOfApp.set(scope.node.root, names);
  return alarm;
}

export const period = Duration.minutes(5);

/** Any error and any throttle (reserved concurrency reached, or the account's) of a function. */
export function functionAlarms(scope: Construct, context: AlarmContext, id: string, fn: SstFunction): Alarm[] {
  return [
    alarmOn(
      scope,
      context,
      `${id}Errors`,
      fn.metricErrors({ period, statistic: 'Sum' }),
      `keyhaven ${id}: the function failed`,
    ),
    alarmOn(
      scope,
      context,
      `${id}Throttles`,
      fn.metricThrottles({ period, statistic: 'Sum' }),
      `keyhaven ${id}: invocations were throttled`,
    ),
  ];
}

export function deadLetterAlarm(scope: Construct, context: AlarmContext, id: string, queue: Queue): Alarm {
  return alarmOn(
    scope,
    context,
    `${id}Messages`,
    queue.metricApproximateNumberOfMessagesVisible({
      period,
      statistic: 'Maximum',
    }),
    `keyhaven ${id}: stream records gave up after their retries (the TTL backstop missed them)`,
  );
}

/** An HTTP API's server errors (its own and its functions') and its p99 latency. */
export function httpApiAlarms(
  stack: Construct,
  context: AlarmContext,
  id: string,
  api: Api,
  latencyP99Ms: number,
): void {
  const httpApi = api.cdk.httpApi;
  alarmOn(
    stack,
    context,
    `${id}5xx`,
    httpApi.metricServerError({ period, statistic: 'Sum' }),
    `keyhaven ${id}: answers with 5xx`,
    {
      threshold: alarmThresholds.api5xx,
    },
  );
  alarmOn(
    stack,
    context,
    `${id}LatencyP99`,
    httpApi.metricLatency({ period, statistic: 'p99' }),
    `keyhaven ${id}: p99 latency at or over ${latencyP99Ms} ms`,
    {
      threshold: latencyP99Ms,
      evaluationPeriods: alarmThresholds.latencyPeriods,
    },
  );
}

/**
 * A distribution's share of 5xx answers. CloudFront publishes its metrics in us-east-1 only, and an alarm sees only its
 * own region's metrics, so elsewhere there is none. CloudFront publishes with both dimensions; CDK's metric names only
 * the first, which matches no data.
 */
export function distributionAlarm(
  stack: Construct,
  context: AlarmContext,
  id: string,
  distribution: Distribution,
): void {
  if (CdkStack.of(stack).region !== 'us-east-1') return;
  const dimensionsMap = { DistributionId: distribution.distributionId, Region: 'Global' };
  alarmOn(
    stack,
    context,
    `${id}5xx`,
    distribution.metric5xxErrorRate({ period, statistic: 'Average', dimensionsMap }),
    `keyhaven ${id}: share of 5xx answers`,
    { threshold: alarmThresholds.cloudFront5xxPercent, evaluationPeriods: alarmThresholds.cloudFrontPeriods },
  );
}

/**
 * Thresholds of the alarms that are not "one occurrence": each is the point past which a person must look.
 * - `streamIteratorAgeMs`: the TTL backstop reads records this old (the stream keeps them 24 h; leases and tokens
 *   removed by TTL are not revoked meanwhile).
 * - `api5xx`: server errors of an HTTP API in 5 minutes (each function error alarms on its own already; this counts
 *   API Gateway's own 5xx too: integration timeouts, throttled integrations).
 * - `secretsLatencyP99Ms` over `latencyPeriods` periods: the secrets API is slow. The scheduler's blocking queries
 *   wait up to 25 s by design, so its latency alarm is `schedulerLatencyP99Ms`, near the API's 30 s limit.
 * - `cloudFront5xxPercent` over `cloudFrontPeriods` periods: the share of the distribution's answers that are 5xx.
 * - `auditFreshnessSeconds`: the oldest audit line not yet in S3 (Firehose buffers 60 s).
 */
export const alarmThresholds = {
  streamIteratorAgeMs: 15 * 60_000,
  api5xx: 5,
  secretsLatencyP99Ms: 5_000,
  schedulerLatencyP99Ms: 28_000,
  latencyPeriods: 3,
  cloudFront5xxPercent: 5,
  cloudFrontPeriods: 2,
  auditFreshnessSeconds: 900,
} as const;
