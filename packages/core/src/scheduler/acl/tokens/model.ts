/** An ACL token: its type, its validation and the shapes the API shows (Nomad's `ACLToken`). */
import * as z from 'zod/mini';
import { badRequest } from '../../../lib/errors.ts';
import type { PendingEvent } from '../../state.ts';
import { wholeSeconds } from '../durations.ts';
import { uuidParameter } from '../identifiers.ts';

export interface RoleLink {
  ID: string;
  Name: string;
}

export interface AclToken {
  AccessorID: string;
  Name: string;
  Type: 'client' | 'management';
  Policies: string[];
  Roles: RoleLink[];
  Global: boolean;
  CreateTime: string;
  ExpirationTime?: string;
  ExpirationTTL?: string;
  Hash: string;
  CreateIndex: number;
  ModifyIndex: number;
}

/** As stored: the secret's hash, and for a token a login made the auth method's name (so its holder may log out). */
export type StoredToken = AclToken & { SecretHash: string; LoginMethod?: string };

/** A token as the API shows it; `SecretID` only when it was just minted. */
export type TokenView = AclToken & { SecretID?: string };

export interface TokenInput {
  Name?: string;
  Type?: string;
  Policies?: string[];
  Roles?: Array<{ ID?: string; Name?: string }>;
  Global?: boolean;
  /** Seconds. */
  ExpirationTTL?: number;
  ExpirationTime?: string;
}

/** The bounds of a requested expiration (a login's token is bounded by its auth method instead). */
export const minTtlSeconds = 60;
export const maxTtlSeconds = 24 * 3600;

export const view = (token: StoredToken | AclToken): AclToken => {
  const { SecretHash: _hash, LoginMethod: _method, ...rest } = token as StoredToken;
  return rest;
};

/** Refuses a token Nomad would refuse: a client token needs policies or roles, a management token has none. */
export function validateToken(type: string, name: string, policies: string[], roles: RoleLink[]): void {
  if (name.length > 256) throw badRequest('token name too long');
  if (type === 'client') {
    if (policies.length === 0 && roles.length === 0) throw badRequest('client token missing policies or roles');
  } else if (type === 'management') {
    if (policies.length > 0 || roles.length > 0)
      throw badRequest('management token cannot be associated with policies or roles');
  } else {
    throw badRequest('token type must be client or management');
  }
}

export function tokenEvent(type: string, token: AclToken): PendingEvent {
  return {
    Topic: 'ACLToken',
    Type: type,
    Key: token.AccessorID,
    Namespace: '',
    FilterKeys: null,
    Payload: { ACLToken: view(token) },
  };
}

/**
 * Nomad's ExpirationTTL: a Go duration string, or nanoseconds as a number; whole seconds (none for empty or zero; a
 * duration under a second is 0 seconds, which the token store refuses as too short).
 */
const ttlField = z.pipe(
  z.optional(z.union([z.string(), z.number()])),
  z.transform((value, ctx) =>
    value === undefined || value === '' || value === 0 ? undefined : wholeSeconds(value, ctx),
  ),
);

export const tokenBody = z.object({
  AccessorID: z
    .optional(z.string())
    .check(z.describe('The accessor ID: absent when creating a token, equal to the ID in the path when updating one.')),
  Name: z.optional(z.string()).check(z.describe('A human-readable name for the token (at most 256 characters).')),
  Type: z.optional(z.string()).check(z.describe('The token type: `client` (the default) or `management`.')),
  Policies: z
    .pipe(
      z.nullish(z.array(z.string())),
      z.transform((value) => value ?? []),
    )
    .check(z.describe('The names of the policies the token grants (client tokens only).')),
  Roles: z
    .pipe(
      z.nullish(
        z.array(
          z.object({
            ID: z.optional(z.string()).check(z.describe('The role ID.')),
            Name: z.optional(z.string()).check(z.describe('The role name (when no ID is given).')),
          }),
        ),
      ),
      z.transform((value) => value ?? []),
    )
    .check(z.describe('The roles the token is linked to, by ID or name (client tokens only).')),
  Global: z
    .optional(z.boolean())
    .check(z.describe('Whether the token is replicated to every region; it cannot change after creation.')),
  ExpirationTTL: ttlField.check(
    z.describe(
      'How long the token lives from its creation: a duration such as `1h` (1 minute to 24 hours), or nanoseconds.',
    ),
  ),
  ExpirationTime: z
    .pipe(
      z.nullish(z.string()),
      z.transform((value) => value ?? undefined),
    )
    .check(z.describe('When the token expires (RFC 3339), instead of ExpirationTTL.')),
});

export const bootstrapBody = z.object({
  BootstrapSecret: z
    .optional(z.string())
    .check(z.describe('The secret ID the bootstrap token gets (a UUID); a random one when absent.')),
});

export const accessorId = uuidParameter('ACL token accessor ID', 'The accessor ID of the token (a UUID).');

/** A token as the list shows it. */
export const tokenStub = (token: AclToken) => ({
  AccessorID: token.AccessorID,
  Name: token.Name,
  Type: token.Type,
  Policies: token.Policies,
  Roles: token.Roles,
  Global: token.Global,
  Hash: token.Hash,
  CreateTime: token.CreateTime,
  ExpirationTime: token.ExpirationTime ?? null,
  CreateIndex: token.CreateIndex,
  ModifyIndex: token.ModifyIndex,
});
