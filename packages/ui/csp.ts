/**
 * The console's Content-Security-Policy, one for every place that serves it (`serve.ts` for `npm start`, the
 * stacks' CloudFront response-headers policy on AWS). Scripts, styles and images come from the console's own origin
 * only; nothing inline, nothing from another origin. `connect-src` names the console's own origin (where the secrets
 * service answers) and the scheduler service's origin, the only two places the console talks to.
 */
export function consoleContentSecurityPolicy(schedulerOrigin: string): string {
  const connect = ["'self'", ...(schedulerOrigin ? [new URL(schedulerOrigin).origin] : [])];
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${connect.join(' ')}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The other headers every console response carries, wherever it is served. */
export const consoleSecurityHeaders: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};
