import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler, withQuery } from '../api.ts';
import { ErrorBox, useAction } from '../components.tsx';
import { navigate } from '../router.tsx';
import { type Job, jobsListHref, type TaskGroup } from './job-model.ts';

/**
 * What a job's page can do (`submit-job`, or the split `deregister-job`/`purge-job`/`register-job`; the service
 * refuses what the token may not, and the page shows its words): stop the job (`DELETE job/<id>`), start a stopped
 * one again and scale a group (the job registered again with `Stop` false or the group's new count, guarded by its
 * `JobModifyIndex` so a change made meanwhile is not overwritten), purge it (`?purge=true`).
 */

/**
 * What the service sets on a registration, left out of a job sent back (`SubmitTime`, in nanoseconds, is beyond what
 * JSON numbers keep exactly, and the service refuses it).
 */
const serverFields = [
  'SubmitTime',
  'CreateIndex',
  'ModifyIndex',
  'JobModifyIndex',
  'Version',
  'Status',
  'StatusDescription',
  'Stable',
] as const;

/** The job registered again with `change` applied, only if nobody registered it since it was read. */
async function reregister(job: Job, change: (copy: Job) => Job): Promise<void> {
  const sent: Record<string, unknown> = change(structuredClone(job));
  for (const field of serverFields) delete sent[field];
  await scheduler('PUT', withQuery(api`job/${job.ID}`, { namespace: job.Namespace }), {
    Job: sent,
    EnforceIndex: true,
    JobModifyIndex: job.JobModifyIndex,
  });
}

/** A button that asks once more in place before it acts. */
function ConfirmButton({
  label,
  confirm,
  busy,
  onConfirm,
}: {
  label: string;
  confirm: string;
  busy: boolean;
  onConfirm: () => void;
}): JSX.Element {
  const [asking, setAsking] = useState(false);
  return asking ? (
    <span class="actions">
      <button
        type="button"
        class="danger"
        disabled={busy}
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        {confirm}
      </button>
      <button type="button" class="secondary" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  ) : (
    <button type="button" class="danger" disabled={busy} onClick={() => setAsking(true)}>
      {label}
    </button>
  );
}

export function JobActions({ job, onChanged }: { job: Job; onChanged: () => void }): JSX.Element {
  const action = useAction();
  const path = withQuery(api`job/${job.ID}`, { namespace: job.Namespace });
  const run = (work: () => Promise<void>) =>
    action.run(async () => {
      await work();
      onChanged();
    });
  return (
    <section class="panel" aria-label="Job actions">
      <h2>Actions</h2>
      <ErrorBox error={action.error} />
      <div class="actions">
        {job.Stop ? (
          <button
            type="button"
            disabled={action.busy}
            onClick={() => void run(() => reregister(job, (copy) => ({ ...copy, Stop: false })))}
          >
            Start job
          </button>
        ) : (
          <ConfirmButton
            label="Stop job"
            confirm="Confirm stop"
            busy={action.busy}
            onConfirm={() => void run(async () => void (await scheduler('DELETE', path)))}
          />
        )}
        <ConfirmButton
          label="Purge job"
          confirm="Confirm purge"
          busy={action.busy}
          onConfirm={() =>
            void action.run(async () => {
              await scheduler('DELETE', withQuery(path, { purge: 'true' }));
              navigate(jobsListHref(job.Namespace, ''));
            })
          }
        />
      </div>
    </section>
  );
}

/** A group's count changed by registering the job again with it (Nomad's UI does the same for a job without scaling). */
export function ScaleGroup({
  job,
  group,
  onChanged,
}: {
  job: Job;
  group: TaskGroup;
  onChanged: () => void;
}): JSX.Element {
  const [count, setCount] = useState(String(group.Count));
  const action = useAction();
  return (
    <form
      class="inline-form"
      aria-label={`Scale ${group.Name}`}
      onSubmit={(event) => {
        event.preventDefault();
        void action.run(async () => {
          const wanted = Number(count);
          if (count.trim() === '' || !Number.isInteger(wanted) || wanted < 0)
            throw new Error(`"${count}" is not a count: a whole number of 0 or more`);
          await reregister(job, (copy) => ({
            ...copy,
            TaskGroups: (copy.TaskGroups ?? []).map((each) =>
              each.Name === group.Name ? { ...each, Count: wanted } : each,
            ),
          }));
          onChanged();
        });
      }}
    >
      <input
        type="number"
        min={0}
        value={count}
        aria-label={`Count of ${group.Name}`}
        onInput={(event) => setCount((event.currentTarget as HTMLInputElement).value)}
      />
      <button type="submit" class="small" disabled={action.busy}>
        Scale
      </button>
      <ErrorBox error={action.error} />
    </form>
  );
}
