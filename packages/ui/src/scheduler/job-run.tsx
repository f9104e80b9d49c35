import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler, withQuery } from '../api.ts';
import { ErrorBox, Field, Page, useAction } from '../components.tsx';
import { Link, navigate, useLocation } from '../router.tsx';
import { SelectField } from './common.tsx';
import { jobHref, jobsListHref } from './job-model.ts';
import { type JobPlan, PlanPreview } from './job-plan.tsx';
import { useNamespaceOptions } from './jobs.tsx';

/**
 * Running a job (`PUT jobs`; `submit-job`): a JSON job spec as Nomad's HTTP API takes it (the job itself, or
 * `{"Job": …}` as `nomad job run -output` prints it), in the namespace picked unless the spec names one. Plan
 * (`PUT job/<id>/plan`, a dry run that writes nothing) shows what the scheduler would place, stop and update, what it
 * could not place and why, and the diff against the stored job; Run after a Plan of the same spec registers only if
 * the job is still as planned (`EnforceIndex`, as `nomad job run -check-index`). A spec that is not JSON is refused
 * here; one the service refuses shows its 400 as it words it. Once registered, the job's page.
 */

const example = JSON.stringify(
  {
    ID: 'example',
    Type: 'service',
    TaskGroups: [
      {
        Name: 'web',
        Count: 1,
        Tasks: [
          {
            Name: 'server',
            Driver: 'raw_exec',
            // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation, for the agent to fill in
            Config: { command: 'python3', args: ['-m', 'http.server', '${NOMAD_PORT_http}'] },
            Resources: { CPU: 100, MemoryMB: 64 },
          },
        ],
        Networks: [{ DynamicPorts: [{ Label: 'http' }] }],
      },
    ],
  },
  null,
  2,
);

/** The job of a spec's text: its JSON object, unwrapped from `{"Job": …}`; an error naming what is wrong otherwise. */
export function jobOfSpec(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`The job spec is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error('The job spec must be a JSON object: the job, or {"Job": …}');
  const record = parsed as Record<string, unknown>;
  const job = 'Job' in record && typeof record.Job === 'object' && record.Job !== null ? record.Job : record;
  return job as Record<string, unknown>;
}

export function RunJobPage(): JSX.Element {
  const { query } = useLocation();
  const [namespace, setNamespace] = useState(() => {
    const wanted = query.get('namespace');
    return wanted && wanted !== '*' ? wanted : 'default';
  });
  const [spec, setSpec] = useState(example);
  // The plan of the spec as it was when planned: Run then registers only if the job is still as planned.
  const [planned, setPlanned] = useState<{ spec: string; namespace: string; plan: JobPlan } | undefined>();
  const namespaces = useNamespaceOptions(namespace, false);
  const action = useAction();
  const current = planned && planned.spec === spec && planned.namespace === namespace ? planned.plan : undefined;
  const plan = () =>
    action.run(async () => {
      setPlanned(undefined);
      const job = jobOfSpec(spec);
      if (typeof job.ID !== 'string' || job.ID === '') throw new Error('The job spec has no ID to plan');
      const answer = await scheduler<JobPlan>('PUT', withQuery(api`job/${job.ID}/plan`, { namespace }), {
        Job: job,
        Diff: true,
      });
      setPlanned({ spec, namespace, plan: answer });
    });
  return (
    <Page title="Run a job" actions={<Link href={jobsListHref(namespace, '')}>Jobs</Link>}>
      <form
        aria-label="Run a job"
        onSubmit={(event) => {
          event.preventDefault();
          void action.run(async () => {
            const job = jobOfSpec(spec);
            const answer = await scheduler<{ EvalID: string }>('PUT', withQuery(api`jobs`, { namespace }), {
              Job: job,
              ...(current ? { EnforceIndex: true, JobModifyIndex: current.JobModifyIndex } : {}),
            });
            const jobNamespace = typeof job.Namespace === 'string' && job.Namespace ? job.Namespace : namespace;
            if (answer && typeof job.ID === 'string') navigate(jobHref(jobNamespace, job.ID));
          });
        }}
      >
        <SelectField
          label="Namespace"
          value={namespace}
          options={namespaces}
          onChange={setNamespace}
          hint="Where the job runs unless its spec names a namespace."
        />
        <Field
          label="Job spec (JSON)"
          value={spec}
          onInput={setSpec}
          multiline
          rows={16}
          hint={'Nomad’s JSON job, or {"Job": …} as nomad job run -output prints it.'}
        />
        <ErrorBox error={action.error} />
        <div class="actions">
          <button type="button" class="secondary" disabled={action.busy} onClick={() => void plan()}>
            Plan
          </button>
          <button type="submit" disabled={action.busy}>
            Run
          </button>
        </div>
      </form>
      {current ? <PlanPreview plan={current} /> : null}
    </Page>
  );
}
