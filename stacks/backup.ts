import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { BackupPlan, BackupPlanRule, BackupResource, BackupVault } from 'aws-cdk-lib/aws-backup';
import { Schedule } from 'aws-cdk-lib/aws-events';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { Table } from 'sst/constructs';
import type { Construct } from 'constructs';
import type { StageConfig } from './stage-config.ts';

/**
 * AWS Backup for the table, beside point-in-time recovery (which goes with the table and its account): a daily
 * backup into a vault of the stage, encrypted with its own key, under Vault Lock (once the lock's grace period
 * has passed, nobody, the account's root included, can delete a recovery point before `retentionDays` or unlock the
 * vault), and, with `copyToVaultArn`, a copy of each backup into a vault of another account (or region). Only stages
 * with `backup` in their config (by default every stage outside dev: a locked vault outlives any teardown).
 */
export function tableBackup(scope: Construct, config: StageConfig, table: Table) {
  const backup = config.backup;
  if (!backup) return undefined;
  if (!(backup.retentionDays >= 1))
    throw new Error(`stage config: backup.retentionDays must be at least 1, not ${backup.retentionDays}`);
  if (!(backup.lockChangeableForDays >= 3)) {
    throw new Error(
      `stage config: backup.lockChangeableForDays must be at least 3 (AWS Backup's cooling-off), not ${backup.lockChangeableForDays}`,
    );
  }
  if (
    backup.copyToVaultArn &&
    !/^arn:aws[\w-]*:backup:[a-z0-9-]+:\d{12}:backup-vault:[\w.-]+$/.test(backup.copyToVaultArn)
  ) {
    throw new Error(`stage config: backup.copyToVaultArn "${backup.copyToVaultArn}" is not a backup vault ARN`);
  }
  const stage = (scope as Construct & { stage?: string }).stage ?? 'stage';
  const key = new Key(scope, 'BackupVaultKey', {
    description: `keyhaven ${stage}: encrypts the table's backups`,
    enableKeyRotation: true,
    removalPolicy: RemovalPolicy.RETAIN,
  });
  const retention = Duration.days(backup.retentionDays);
  const vault = new BackupVault(scope, 'BackupVault', {
    backupVaultName: `keyhaven-${stage}`,
    encryptionKey: key,
    removalPolicy: RemovalPolicy.RETAIN,
    lockConfiguration: { minRetention: retention, changeableFor: Duration.days(backup.lockChangeableForDays) },
  });
  const copyTo = backup.copyToVaultArn
    ? BackupVault.fromBackupVaultArn(scope, 'BackupCopyVault', backup.copyToVaultArn)
    : undefined;
  const plan = new BackupPlan(scope, 'BackupPlan', { backupPlanName: `keyhaven-${stage}`, backupVault: vault });
  plan.addRule(
    new BackupPlanRule({
      ruleName: 'daily',
      scheduleExpression: Schedule.cron({ hour: '3', minute: '0' }),
      deleteAfter: retention,
      ...(copyTo ? { copyActions: [{ destinationBackupVault: copyTo, deleteAfter: retention }] } : {}),
    }),
  );
  plan.addSelection('Table', { resources: [BackupResource.fromDynamoDbTable(table.cdk.table)] });
  return { vault, plan, key };
}
