import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, type IMetric, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import type { Function as SstFunction } from 'sst/constructs';
import type { Construct } from 'constructs';
import type { StageConfig } from './stage-config.ts';

/**
 * One alarm per condition that needs a person: any error of a function, any throttle (reserved concurrency
 * reached, or the account's), any record in a dead-letter queue. Each fires on one occurrence in a 5-minute period
 * and is OK when there is no data. With `alarmTopicArn` in the stage config, each notifies that SNS topic.
 */
export function alarmOn(scope: Construct, config: StageConfig, id: string, metric: IMetric, description: string): Alarm {
  const alarm = new Alarm(scope, id, {
    metric,
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: TreatMissingData.NOT_BREACHING,
    alarmDescription: description,
  });
  if (config.alarmTopicArn) {
    const topic = Topic.fromTopicArn(scope, `${id}Topic`, config.alarmTopicArn);
    alarm.addAlarmAction(new SnsAction(topic));
    alarm.addOkAction(new SnsAction(topic));
  }
  return alarm;
}

const period = Duration.minutes(5);

export function functionAlarms(scope: Construct, config: StageConfig, id: string, fn: SstFunction): Alarm[] {
  return [
    alarmOn(scope, config, `${id}Errors`, fn.metricErrors({ period, statistic: 'Sum' }), `keyhaven ${id}: the function failed`),
    alarmOn(scope, config, `${id}Throttles`, fn.metricThrottles({ period, statistic: 'Sum' }), `keyhaven ${id}: invocations were throttled`),
  ];
}

export function deadLetterAlarm(scope: Construct, config: StageConfig, id: string, queue: Queue): Alarm {
  return alarmOn(
    scope,
    config,
    `${id}Messages`,
    queue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' }),
    `keyhaven ${id}: stream records gave up after their retries (the TTL backstop missed them)`,
  );
}
