import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Core } from '@keyhaven/core/core.ts';
import { coreFromEnvironment } from '@keyhaven/core/runtime.ts';
import { ConditionFailed } from '@keyhaven/core/storage/store.ts';
import { onTableChange } from '@keyhaven/core/table-changes.ts';
import type { DynamoDBRecord } from 'aws-lambda';
import { toTableChange } from './table-stream.ts';

/**
 * The replay of the TTL backstop's failed batches (issue 25). Lambda writes a batch it gave up on to the
 * `TableStreamFailures` bucket as one JSON object per batch, under `aws/lambda/<mapping id>/<shard id>/YYYY/MM/DD/…`:
 * the invocation record (`requestContext`, `responseContext`, `version`, `timestamp`, `DDBStreamBatchInfo` with the
 * shard and sequence-number range) and, for an S3 destination only, `payload`: the whole event the function was
 * given (`{"Records": [...]}`, as a JSON string). The operator copies the bucket to a directory
 * (`aws s3 sync s3://<bucket>/aws/lambda/ <dir>`) and runs, with the stream function's environment
 * (`KEYHAVEN_TABLE`, `KEYHAVEN_KMS_KEY_ID`):
 *
 *   node --import tsx functions/jobs/replay-stream-failures.ts <dir>
 *
 * Each record goes through `onTableChange` as the stream function would have sent it. Idempotent: a record replayed
 * is marked in the table (`stream-replays`, by its stream event id) and never replayed again, and within two days
 * of a revocation `onTableChange` itself tells a replayed removal by the lease's tombstone.
 */

/** One object of the failures bucket: its key (or path) and its text. */
export interface FailureObject {
  key: string;
  body: string;
}

export interface ReplayReport {
  /** Records handed to `onTableChange` now. */
  replayed: number;
  /** Records replayed by an earlier run (marked in the table). */
  alreadyReplayed: number;
  /** Objects refused whole (not a stream failure record, no payload), or records that failed again; with why. */
  refused: Array<{ key: string; reason: string }>;
}

/** Marks in the table which stream records were replayed: the partition and the attribute names. */
export const replayPartition = 'stream-replays';

/** The records of one failure object, in shard order; an object that is not one says what is wrong with it. */
export function failedRecords(object: FailureObject): DynamoDBRecord[] {
  let envelope: unknown;
  try {
    envelope = JSON.parse(object.body);
  } catch {
    throw new Error(`${object.key}: not JSON`);
  }
  if (typeof envelope !== 'object' || envelope === null || !('DDBStreamBatchInfo' in envelope)) {
    throw new Error(`${object.key}: not a DynamoDB stream failure record (no DDBStreamBatchInfo)`);
  }
  const payload = (envelope as { payload?: unknown }).payload;
  if (payload === undefined) {
    throw new Error(
      `${object.key}: no payload, only the batch's pointers (an SQS or SNS destination's record); read its records from the stream with DDBStreamBatchInfo while the stream still holds them`,
    );
  }
  let event: unknown = payload;
  if (typeof payload === 'string') {
    try {
      event = JSON.parse(payload);
    } catch {
      throw new Error(`${object.key}: payload is not the JSON of a stream event`);
    }
  }
  const records = (event as { Records?: unknown } | null)?.Records;
  if (!Array.isArray(records)) throw new Error(`${object.key}: payload has no Records list`);
  records.forEach((record, index) => {
    if (typeof record !== 'object' || record === null || typeof (record as DynamoDBRecord).dynamodb !== 'object') {
      throw new Error(`${object.key}: record ${index} is not a DynamoDB stream record (no dynamodb)`);
    }
  });
  return records as DynamoDBRecord[];
}

/** What a record is known by in the replay marks: its stream event id (unique per stream record). */
const recordId = (record: DynamoDBRecord) => record.eventID ?? `${record.eventSourceARN ?? ''}#${record.dynamodb?.SequenceNumber ?? ''}`;

/**
 * Replays every record of the objects, object by object in the order given, records in their shard order. A record
 * that fails again stops its object (the rest of it stays unmarked, for the next run) and is reported.
 */
export async function replayStreamFailures(core: Core, objects: FailureObject[]): Promise<ReplayReport> {
  const report: ReplayReport = { replayed: 0, alreadyReplayed: 0, refused: [] };
  for (const object of objects) {
    let records: DynamoDBRecord[];
    try {
      records = failedRecords(object);
    } catch (error) {
      report.refused.push({
        key: object.key,
        reason: (error as Error).message,
      });
      continue;
    }
    for (const record of records) {
      const id = recordId(record);
      if (await core.store.get(replayPartition, id)) {
        report.alreadyReplayed += 1;
        continue;
      }
      try {
        await onTableChange(core, [toTableChange(record)]);
      } catch (error) {
        report.refused.push({
          key: object.key,
          reason: `record ${id} failed again: ${String(error)}`,
        });
        break;
      }
      try {
        await core.store.put({
          Item: {
            pk: replayPartition,
            sk: id,
            object: object.key,
            replayedAt: new Date(core.clock.now()).toISOString(),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        });
      } catch (error) {
        if (!(error instanceof ConditionFailed)) throw error;
      }
      report.replayed += 1;
    }
  }
  return report;
}

/** Every file under a directory (an `aws s3 sync` of the bucket), keyed by its path from there, in key order. */
export async function failureObjectsIn(directory: string): Promise<FailureObject[]> {
  const entries = await readdir(directory, {
    recursive: true,
    withFileTypes: true,
  });
  const files = entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
  return Promise.all(
    files.map(async (file) => ({
      key: path.relative(directory, file),
      body: await readFile(file, 'utf8'),
    })),
  );
}

async function main(argv: string[]): Promise<number> {
  const directory = argv[0];
  if (!directory || argv.length > 1) {
    process.stderr.write(
      'usage: node --import tsx functions/jobs/replay-stream-failures.ts <directory synced from the TableStreamFailures bucket>\n',
    );
    return 2;
  }
  const core = await coreFromEnvironment([])();
  const report = await replayStreamFailures(core, await failureObjectsIn(directory));
  process.stdout.write(`${JSON.stringify(report)}\n`);
  return report.refused.length > 0 ? 1 : 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error) => {
      process.stderr.write(`replay failed: ${String(error)}\n`);
      process.exit(1);
    },
  );
}
