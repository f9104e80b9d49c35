import type { IncomingMessage } from 'node:http';
import type { ServiceAccount } from '../google.ts';

/** The Google emulator's errors (API and OAuth shapes), name rules and the route shape. */

export class GoogleError extends Error {
  constructor(
    readonly code: number,
    readonly status: string,
    message: string,
  ) {
    super(message);
  }
}

export class OAuthError extends Error {
  constructor(
    readonly code: number,
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }
}

export const accountIdPattern = /^[a-z]([-a-z0-9]*[a-z0-9])$/;
export const cloudPlatformScope = 'https://www.googleapis.com/auth/cloud-platform';
export const memberPattern =
  /^(allUsers|allAuthenticatedUsers|(user|serviceAccount|group|domain|principal|principalSet|deleted:serviceAccount|deleted:user|deleted:group):.+)$/;
export const rolePattern =
  /^(roles\/[A-Za-z0-9_.]+|projects\/[^/]+\/roles\/[A-Za-z0-9_.]+|organizations\/[0-9]+\/roles\/[A-Za-z0-9_.]+)$/;

export interface AccountState {
  account: ServiceAccount;
  invisibleFor: number;
}

/** One endpoint: its method, its path as a regular expression, the operation name failures and calls use, and its handler. */
export type Route = {
  method: string;
  pattern: RegExp;
  operation: string;
  handle: (match: string[], body: unknown, request: IncomingMessage, query: URLSearchParams) => unknown;
};
