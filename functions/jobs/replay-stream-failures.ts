import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { dynamoDbClient, localEndpoint } from '@keyhaven/core/entry-points/shared-core-from-environment.ts';
import { ConditionFailed } from '@keyhaven/core/storage/condition-failed.ts';
import { DynamoStore } from '@keyhaven/core/storage/dynamodb-store.ts';
import type { DynamoDBBatchResponse, DynamoDBRecord } from 'aws-lambda';

/**
 * The replay of the TTL backstop's failed batches (issue 25). Lambda writes a batch it gave up on to the
 * `TableStreamFailures` bucket as one JSON object per batch, under `aws/lambda/<mapping id>/<shard id>/YYYY/MM/DD/…`:
 * the invocation record (`requestContext`, `responseContext`, `version`, `timestamp`, `DDBStreamBatchInfo` with the
 * shard and sequence-number range) and, for an S3 destination only, `payload`: the whole event the function was
 * given (`{"Records": [...]}`, as a JSON string). The operator copies the bucket to a directory
 * (`aws s3 sync s3://<bucket>/aws/lambda/ <dir>`) and runs
 *
 *   node --import tsx functions/jobs/replay-stream-failures.ts <stream function> <table> <dir>
 *
 * Each record is sent again, alone, to the stream function (functions/jobs/table-stream.ts): it runs with that
 * function's role, the only one besides the other functions that the sealing key lets unwrap the data key, and
 * revokes exactly as it would have. Idempotent: a record the function took is marked in the table (`stream-replays`,
 * by its stream event id) and never sent again; within two days of a revocation the function itself also tells a
 * replayed removal by the lease's tombstone. `KEYHAVEN_LAMBDA_ENDPOINT` and `KEYHAVEN_DYNAMODB_ENDPOINT` point the
 * clients at local stand-ins.
 */

/** One object of the failures bucket: its key (or path) and its text. */
export interface FailureObject {
  key: string;
  body: string;
}

export interface ReplayReport {
  /** Records the stream function took now. */
  replayed: number;
  /** Records replayed by an earlier run (marked in the table). */
  alreadyReplayed: number;
  /** Objects refused whole (not a stream failure record, no payload), or records that failed again; with why. */
  refused: Array<{ key: string; reason: string }>;
}

/** The table partition of the replay's marks: one item per stream record the stream function took again. */
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
const recordId = (record: DynamoDBRecord) =>
  record.eventID ?? `${record.eventSourceARN ?? ''}#${record.dynamodb?.SequenceNumber ?? ''}`;

/** Where the replay sends records and keeps its marks. */
export interface ReplayTarget {
  /** The stream function, given one record: undefined when it took it, else why not. */
  send(record: DynamoDBRecord): Promise<string | undefined>;
  replayed(id: string): Promise<boolean>;
  mark(id: string, objectKey: string): Promise<void>;
}

/**
 * Replays every record of the objects, object by object in the order given, records in their shard order. A record
 * that fails again stops its object (the rest of it stays unmarked, for the next run) and is reported.
 */
export async function replayStreamFailures(target: ReplayTarget, objects: FailureObject[]): Promise<ReplayReport> {
  const report: ReplayReport = { replayed: 0, alreadyReplayed: 0, refused: [] };
  for (const object of objects) {
    let records: DynamoDBRecord[];
    try {
      records = failedRecords(object);
    } catch (error) {
      report.refused.push({ key: object.key, reason: (error as Error).message });
      continue;
    }
    for (const record of records) {
      const id = recordId(record);
      if (await target.replayed(id)) {
        report.alreadyReplayed += 1;
        continue;
      }
      const failure = await target.send(record);
      if (failure !== undefined) {
        report.refused.push({ key: object.key, reason: `record ${id} failed again: ${failure}` });
        break;
      }
      await target.mark(id, object.key);
      report.replayed += 1;
    }
  }
  return report;
}

/** The stream function through Lambda's Invoke API, and the marks in the table. */
export function streamFunctionTarget(options: {
  functionName: string;
  tableName: string;
  dynamodb: DynamoDBClient;
  lambda: LambdaClient;
}): ReplayTarget {
  const store = new DynamoStore(options.dynamodb, options.tableName);
  return {
    async send(record) {
      const out = await options.lambda.send(
        new InvokeCommand({
          FunctionName: options.functionName,
          Payload: new TextEncoder().encode(JSON.stringify({ Records: [record] })),
        }),
      );
      const text = new TextDecoder().decode(out.Payload);
      if (out.FunctionError)
        return `the stream function failed: ${(JSON.parse(text || '{}') as { errorMessage?: string }).errorMessage ?? out.FunctionError}`;
      const answer = JSON.parse(text || '{}') as Partial<DynamoDBBatchResponse>;
      if ((answer.batchItemFailures ?? []).length > 0)
        return 'the stream function reported it failed (its log says why)';
      return undefined;
    },
    async replayed(id) {
      return (await store.get(replayPartition, id)) !== undefined;
    },
    async mark(id, objectKey) {
      try {
        await store.put(
          { pk: replayPartition, sk: id, object: objectKey, replayedAt: new Date().toISOString() },
          { when: { absent: true } },
        );
      } catch (error) {
        if (!(error instanceof ConditionFailed)) throw error;
      }
    },
  };
}

/** Every file under a directory (an `aws s3 sync` of the bucket), keyed by its path from there, in key order. */
export async function failureObjectsIn(directory: string): Promise<FailureObject[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
  return Promise.all(
    files.map(async (file) => ({ key: path.relative(directory, file), body: await readFile(file, 'utf8') })),
  );
}

async function main(argv: string[], env = process.env): Promise<number> {
  const [functionName, tableName, directory] = argv;
  if (!functionName || !tableName || !directory || argv.length > 3) {
    process.stderr.write(
      'usage: node --import tsx functions/jobs/replay-stream-failures.ts <stream function> <table> <directory synced from the TableStreamFailures bucket>\n',
    );
    return 2;
  }
  const lambdaEndpoint = env.KEYHAVEN_LAMBDA_ENDPOINT;
  const lambda = new LambdaClient(lambdaEndpoint ? localEndpoint(lambdaEndpoint) : {});
  const dynamodb = dynamoDbClient(env.KEYHAVEN_DYNAMODB_ENDPOINT);
  try {
    const report = await replayStreamFailures(
      streamFunctionTarget({ functionName, tableName, dynamodb, lambda }),
      await failureObjectsIn(directory),
    );
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return report.refused.length > 0 ? 1 : 0;
  } finally {
    lambda.destroy();
    dynamodb.destroy();
  }
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
