/**
 * `PUT|POST /v1/jobs/parse`, as Nomad's (`command/agent/job_endpoint.go` `JobsParseRequest`): an HCL2 job file to the
 * `api.Job` JSON that `PUT /v1/jobs` takes (`parse-job.ts`), canonicalised with the defaults a registration applies
 * when `Canonicalize` is set (`jobs/model.ts`). Nothing is stored. ACL as Nomad's: `parse-job` or `submit-job` in
 * the request's namespace (`?namespace=`, else `default`). Nomad's request no longer has `HCLv1`: every file is HCL2,
 * and the field is ignored as Nomad ignores it. A file that does not
 * parse, or that this service cannot evaluate, is a 400 `Failed to parse job: …` naming the problem.
 */
import * as z from 'zod/mini';
import { badRequest } from '../../../lib/errors.ts';
import { namespaceQuery } from '../../http/namespaced-list.ts';
import { permissionDenied } from '../../http/nomad.ts';
import { route, type SchedulerRoute } from '../../http/route.ts';
import { canonicalJob } from '../jobs/model.ts';
import { allowsAny } from '../jobs/routes.ts';
import { parseJobHcl } from './parse-job.ts';

const parseBody = z.object({
  JobHCL: z.optional(z.string()).check(z.describe('The job file, in HCL2 (Nomad’s jobspec).')),
  Variables: z
    .optional(z.string())
    .check(z.describe('Values for the file’s variables, as the content of a variables file: `name = "value"` lines.')),
  Canonicalize: z
    .optional(z.boolean())
    .check(z.describe('Answer the job with the defaults a registration applies (region, namespace, update, …).')),
});

export const jobParseRoutes: SchedulerRoute[] = [
  route({
    method: ['PUT', 'POST'],
    path: '/v1/jobs/parse',
    summary: 'Parse an HCL2 job file into the JSON job that `PUT /v1/jobs` takes; nothing is stored.',
    access: 'token',
    query: { namespace: namespaceQuery },
    body: parseBody,
    returns: 'The job (`api.Job`), canonicalised when `Canonicalize` is set; 400 `Failed to parse job: …` for bad HCL.',
    handler: async ({ caller, body, query }) => {
      const namespace = query.namespace || 'default';
      if (!allowsAny((await caller()).acl, namespace, ['parse-job', 'submit-job'])) throw permissionDenied();
      if (!body.JobHCL) throw badRequest('Job spec is empty');
      const job = await parseJobHcl({
        JobHCL: body.JobHCL,
        ...(body.Variables === undefined ? {} : { Variables: body.Variables }),
      });
      return { json: body.Canonicalize ? canonicalJob(job, 'default', '') : job };
    },
  }),
];
