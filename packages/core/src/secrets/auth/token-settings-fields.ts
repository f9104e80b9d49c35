import * as z from 'zod';
import { bool, count, duration, stringList } from '../framework/fields.ts';

/** The token types a role may ask for (Vault's `logical.TokenType` names). */
export const tokenTypes = ['default', 'service', 'batch', 'default-service', 'default-batch'] as const;

/**
 * The token settings a role declares for the tokens issued through it (Vault's `tokenutil.TokenFields`): a login
 * method's role (`jwt/roles.ts`) takes all of them, a token role (`token/roles-paths.ts`) all but the TTLs and
 * policies (`tokenRoleSettingsFields`), as Vault's token store removes them.
 */
export const tokenSettingsFields = {
  token_ttl: duration.optional().describe('The initial ttl of the token to generate.'),
  token_max_ttl: duration.optional().describe('The maximum lifetime of the generated token.'),
  token_explicit_max_ttl: duration
    .optional()
    .describe(
      'If set, tokens created via this role carry an explicit maximum TTL. During renewal, the current maximum TTL values of the role and the mount are not checked for changes, and any updates to these values will have no effect on the token being renewed.',
    ),
  token_period: duration
    .optional()
    .describe(
      'If set, tokens created via this role will have no max lifetime; instead, their renewal period will be fixed to this value. This takes an integer number of seconds, or a string duration (e.g. "24h").',
    ),
  token_policies: stringList.optional().describe('Comma-separated list of policies.'),
  token_bound_cidrs: stringList
    .optional()
    .describe(
      'Comma separated string or JSON list of CIDR blocks. If set, specifies the blocks of IP addresses which are allowed to use the generated token.',
    ),
  token_no_default_policy: bool
    .optional()
    .describe("If true, the 'default' policy will not automatically be added to generated tokens."),
  token_num_uses: count
    .optional()
    .describe('The maximum number of times a token may be used, a value of zero means unlimited.'),
  token_type: z
    .enum(tokenTypes, { message: `must be one of ${tokenTypes.join(', ')}` })
    .optional()
    .describe('The type of token to generate: service, batch, default-service or default-batch.'),
};

/** A token role's settings: every token setting but the TTLs and policies, which a token role sets otherwise. */
export const tokenRoleSettingsFields = z
  .object(tokenSettingsFields)
  .omit({ token_ttl: true, token_max_ttl: true, token_policies: true }).shape;
