import { badRequest } from '../../lib/errors.ts';

/**
 * Where an engine sends its credentials is operator configuration (the server's environment, which the SST stage
 * config sets for the deployed functions), never a request field: a token allowed to tune a mount must not be able to
 * aim the cloud engine's root service-account token at a host of its choosing (issue 23 §3). The cloud engine's API
 * base URLs are read only from these variables; the same names given as mount options are refused, at enable and at
 * tune, for secrets engines and auth methods alike. See docs/operator-settings.md.
 */
export const googleEndpointVariables = {
  iam_endpoint: 'KEYHAVEN_GOOGLE_IAM_URL',
  iamcredentials_endpoint: 'KEYHAVEN_GOOGLE_IAMCREDENTIALS_URL',
  resourcemanager_endpoint: 'KEYHAVEN_GOOGLE_CRM_URL',
  storage_endpoint: 'KEYHAVEN_GOOGLE_STORAGE_URL',
  sts_endpoint: 'KEYHAVEN_GOOGLE_STS_URL',
  token_endpoint: 'KEYHAVEN_GOOGLE_TOKEN_URL',
} as const;

/**
 * A mount option whose name says it is a destination (`*_endpoint`, `*_url`, `*_uri`, `*_addr`, `*_address`, `*_host`,
 * any case): none is read from a mount's options, so none may be set as one (a refusal says so, rather than storing a
 * setting that silently does nothing).
 */
export const isOperatorOnlyOption = (name: string) =>
  /(?:_endpoint|_url|_uri|_addr|_address|_host)$/i.test(name.trim());

/** Why `options.<name>` is refused, naming where the setting lives instead. */
export function operatorOnlyMessage(name: string): string {
  const variable = (googleEndpointVariables as Record<string, string>)[name.trim().toLowerCase()];
  const where = variable
    ? `the server's environment (${variable}) or the stage config`
    : "the server's environment or the stage config";
  return `options.${name} is operator configuration: where an engine sends its credentials is set in ${where}, never through the API (see docs/operator-settings.md)`;
}

/** Throws the 400 for the first destination option in `options`, if any (the mount table's own guard). */
export function refuseOperatorOptions(options: Record<string, unknown> | undefined): void {
  for (const name of Object.keys(options ?? {})) {
    if (isOperatorOnlyOption(name)) throw badRequest(operatorOnlyMessage(name));
  }
}
