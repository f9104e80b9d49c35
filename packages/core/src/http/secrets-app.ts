import type { Core } from '../composition/secrets-core.ts';
import { clientIpFrom, trustedProxiesFromEnvironment } from '../lib/client-ip.ts';
import { type SecretsRegionOptions, secretsRegionsFromEnvironment } from './forward-writes.ts';
import { secretsFront } from './secrets-front.ts';
import { type WebApp, webApp } from './web-app.ts';

export interface SecretsAppOptions {
  /** The core, created once per process on first use. */
  core: () => Promise<Core>;
  /** The caller's address (in process there is no socket). */
  clientIp: () => string;
  /** Regions (`forward-writes.ts`); default from the environment (`KEYHAVEN_REGION`…), else one region. */
  regions?: SecretsRegionOptions;
  /** Proxies whose `X-Forwarded-For` is believed (`client-ip.ts`); default `KEYHAVEN_TRUSTED_PROXIES`, else none. */
  trustedProxies?: readonly string[];
}

/**
 * The secrets service in process, as web requests (tests and benchmarks call it; `npm start` serves
 * `secrets-node.ts`, AWS `secrets-lambda.ts`): the shared web adapter (`web-app.ts`) over `secretsFront`.
 */
export function createSecretsApp(options: SecretsAppOptions): WebApp {
  const front = secretsFront({
    core: options.core,
    regions: options.regions ?? secretsRegionsFromEnvironment(process.env),
  });
  const trustedProxies = options.trustedProxies ?? trustedProxiesFromEnvironment(process.env);
  return webApp((request) =>
    front({
      ...request,
      clientIp: clientIpFrom(options.clientIp(), request.headers.get('x-forwarded-for') ?? undefined, trustedProxies),
    }),
  );
}
