import { ArnFormat } from 'aws-cdk-lib';
import { Alarm, AlarmStatusWidget, AlarmWidget, Dashboard, type IAlarm } from 'aws-cdk-lib/aws-cloudwatch';
import { type StackContext, use } from 'sst/constructs';
import { alarmNamesOf } from './alarms.ts';
import { Audit } from './Audit.ts';
import { Jobs } from './Jobs.ts';
import { SchedulerApi } from './SchedulerApi.ts';
import { SecretsApi } from './SecretsApi.ts';
import { Storage } from './Storage.ts';

/**
 * The stage's dashboard (`keyhaven-<stage>`): the state of every alarm the other stacks made, then one graph per
 * alarm with its threshold. Alarms are referred to by their names (`keyhaven-<stage>-<id>`), not across stacks, so
 * replacing an alarm never blocks a deploy on a cross-stack export.
 */
export function Operations({ stack }: StackContext) {
  use(Storage);
  use(SecretsApi);
  use(SchedulerApi);
  use(Jobs);
  use(Audit);
  const alarms: IAlarm[] = alarmNamesOf(stack).map((name) =>
    Alarm.fromAlarmArn(
      stack,
      `Alarm-${name}`,
      stack.formatArn({
        service: 'cloudwatch',
        resource: 'alarm',
        resourceName: name,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      }),
    ),
  );
  const dashboard = new Dashboard(stack, 'Dashboard', {
    dashboardName: `keyhaven-${stack.stage}`,
  });
  dashboard.addWidgets(
    new AlarmStatusWidget({
      title: `keyhaven ${stack.stage}: alarms`,
      alarms,
      width: 24,
      height: Math.max(3, Math.ceil(alarms.length / 4) + 2),
    }),
  );
  dashboard.addWidgets(
    ...alarms.map((alarm) => new AlarmWidget({ alarm, title: alarm.alarmName, width: 6, height: 5 })),
  );
  stack.addOutputs({ Dashboard: dashboard.dashboardName });
  return { dashboard };
}
