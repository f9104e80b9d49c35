/**
 * The scheduler configuration over HTTP, as Nomad's (`command/agent/operator_endpoint.go`,
 * `nomad/operator_endpoint.go`): `GET /v1/operator/scheduler/configuration` needs `operator:read` and answers
 * `SchedulerConfigurationResponse` (`{SchedulerConfig, Index, LastContact, KnownLeader, NextToken}`);
 * `PUT|POST` needs `operator:write`, takes `?cas=<index>` and answers `{Updated, Index}`.
 */
import * as z from 'zod/mini';
import { badRequest } from '../../../lib/errors.ts';
import { permissionDenied } from '../../http/nomad.ts';
import { route, type SchedulerRoute } from '../../http/route.ts';
import { schedulerConfigBody, validateSchedulerConfig } from './model.ts';

const path = '/v1/operator/scheduler/configuration';

/** Go's ParseUint of `?cas=`: a whole decimal number. */
function casIndex(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,19}$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw badRequest(`Error parsing cas value: strconv.ParseUint: parsing ${JSON.stringify(value)}: invalid syntax`);
  return Number(value);
}

export const schedulerConfigRoutes: SchedulerRoute[] = [
  route({
    method: 'GET',
    path,
    summary: 'Read the scheduler configuration.',
    access: 'token',
    blocking: ['scheduler_config'],
    returns: '`{SchedulerConfig, Index, LastContact, KnownLeader, NextToken}` (Nomad’s defaults until one is written).',
    handler: async ({ scheduler, caller }) => {
      if (!(await caller()).acl.allow('operator', 'read')) throw permissionDenied();
      return {
        read: async () => {
          const config = await scheduler.schedulerConfig.get();
          return {
            SchedulerConfig: config,
            Index: config.ModifyIndex,
            LastContact: 0,
            KnownLeader: true,
            NextToken: '',
          };
        },
      };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path,
    summary: 'Set the scheduler configuration (with `?cas=` only if it is still at that index).',
    access: 'token',
    query: {
      cas: z
        .optional(z.string())
        .check(z.describe('The ModifyIndex the configuration must be at for the write to land.')),
    },
    body: schedulerConfigBody,
    returns: '`{Updated, Index}`: whether it was written (false only when `cas` did not match).',
    handler: async ({ scheduler, caller, query, body }) => {
      if (!(await caller()).acl.allow('operator', 'write')) throw permissionDenied();
      const cas = casIndex(query.cas);
      const content = validateSchedulerConfig(body);
      const { updated, index } = await scheduler.schedulerConfig.set(content, cas);
      return { json: { Updated: updated, Index: index }, index };
    },
  }),
];
