/**
 * A parameterized batch job dispatched, as Nomad's `Job.Dispatch` (`nomad/job_endpoint.go`): the request checked
 * against the parent's `ParameterizedJob` (the payload forbidden, optional or required and at most 16 KiB; every
 * required meta key given, none but the required and optional ones), then a child job registered (`store.ts`, one
 * write with its evaluation): a copy of the parent with its own ID, `ParentID` the parent's, `Dispatched: true`, the
 * request's meta merged into its Meta and the payload (base64, as sent) in `Payload`. A request with an
 * `IdempotencyToken` that a child of the parent still stored already carries is answered with that child (no
 * evaluation, nothing written), as Nomad's retry guard.
 *
 * The child's ID is Nomad's `<parent>/dispatch-<unix seconds>-<8 hex>`: the job routes take a job ID with its `/`
 * spelt `%2F` (`lib/request-path.ts` `segmentedPath`, the rows' `slashParams`), as Nomad's `api` package sends it.
 */
import { randomBytes } from 'node:crypto';
import { badRequest, notFound } from '../../../lib/errors.ts';
import type { Job } from './model.ts';
import type { Jobs } from './store.ts';

/** Nomad's DispatchPayloadSizeLimit. */
export const dispatchPayloadLimit = 16 * 1024;

export interface DispatchRequest {
  Payload?: string | null | undefined;
  Meta?: Record<string, string> | null | undefined;
  IdPrefixTemplate?: string | undefined;
  IdempotencyToken?: string | undefined;
}

export interface DispatchResult {
  DispatchedJobID: string;
  EvalID: string;
  EvalCreateIndex: number;
  JobCreateIndex: number;
  Index: number;
}

const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];

/** The payload's bytes (base64 as Go's []byte in JSON); a 400 when it is not base64. */
function payloadBytes(payload: string): Buffer {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(payload) || payload.length % 4 !== 0)
    throw badRequest('Payload must be base64 encoded');
  return Buffer.from(payload, 'base64');
}

/** Checks the request against the parent's parameters (Nomad's validateDispatchRequest). */
function validateRequest(request: DispatchRequest, parent: Job): void {
  const parameters = parent.ParameterizedJob ?? {};
  const payload = request.Payload ? payloadBytes(request.Payload) : Buffer.alloc(0);
  const mode = typeof parameters.Payload === 'string' && parameters.Payload !== '' ? parameters.Payload : 'optional';
  if (payload.length > 0 && mode === 'forbidden') throw badRequest('Payload is not allowed');
  if (payload.length === 0 && mode === 'required')
    throw badRequest('Payload is not provided but required by parameterized job');
  if (payload.length > dispatchPayloadLimit)
    throw badRequest(`Payload exceeds maximum size; ${payload.length} > ${dispatchPayloadLimit}`);
  const keys = Object.keys(request.Meta ?? {});
  const required = strings(parameters.MetaRequired);
  const permitted = new Set([...required, ...strings(parameters.MetaOptional)]);
  const unpermitted = keys.filter((key) => !permitted.has(key)).sort();
  if (unpermitted.length > 0)
    throw badRequest(`Dispatch request included unpermitted metadata keys: [${unpermitted.join(' ')}]`);
  const missing = required.filter((key) => !keys.includes(key)).sort();
  if (missing.length > 0) throw badRequest(`Dispatch did not provide required meta keys: [${missing.join(' ')}]`);
}

/** The child's ID: Nomad's `<parent>/dispatch-<unix>[-<template>]-<8 hex>`. */
export function dispatchedId(parentId: string, template: string | undefined, nowMs: number): string {
  const middle = template ? `-${template}` : '';
  return `${parentId}/dispatch-${Math.floor(nowMs / 1000)}${middle}-${randomBytes(4).toString('hex')}`;
}

export async function dispatchJob(
  jobs: Jobs,
  namespace: string,
  parentId: string,
  request: DispatchRequest,
  nowMs: number,
): Promise<DispatchResult> {
  const parent = await jobs.get(namespace, parentId);
  if (!parent) throw notFound('parameterized job not found');
  if (!parent.ParameterizedJob || parent.Dispatched === true)
    throw badRequest(`Specified job "${parentId}" is not a parameterized job`);
  if (parent.Stop) throw badRequest(`Specified job "${parentId}" is stopped`);
  if (request.IdPrefixTemplate !== undefined && /[\s/\0]/.test(request.IdPrefixTemplate))
    throw badRequest('IdPrefixTemplate must not contain a space, a slash or a null character');
  validateRequest(request, parent);
  const token = request.IdempotencyToken ?? '';
  if (token !== '') {
    const earlier = (await jobs.list(namespace)).find(
      (job) => job.Dispatched === true && job.ParentID === parent.ID && job.DispatchIdempotencyToken === token,
    );
    if (earlier)
      return {
        DispatchedJobID: earlier.ID,
        EvalID: '',
        EvalCreateIndex: 0,
        JobCreateIndex: earlier.CreateIndex,
        Index: earlier.ModifyIndex,
      };
  }
  const id = dispatchedId(parentId, request.IdPrefixTemplate, nowMs);
  const child: Job = {
    ...structuredClone(parent),
    ID: id,
    Name: id,
    ParentID: parent.ID,
    Dispatched: true,
    DispatchIdempotencyToken: token,
    Status: '',
    StatusDescription: '',
    Meta: { ...(parent.Meta ?? {}), ...(request.Meta ?? {}) },
    Payload: request.Payload ? request.Payload : null,
  };
  const registered = await jobs.register(child);
  return {
    DispatchedJobID: id,
    EvalID: registered.EvalID,
    EvalCreateIndex: registered.EvalCreateIndex,
    JobCreateIndex: registered.Index,
    Index: registered.Index,
  };
}
