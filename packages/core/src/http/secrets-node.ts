import type { IncomingMessage, ServerResponse } from 'node:http';
import { jsonReply } from '../front/exchange.ts';
import { trustedProxiesFromEnvironment } from '../lib/client-ip.ts';
import { secretsRegionsFromEnvironment } from './forward-writes.ts';
import { nodeListener } from './node-listener.ts';
import type { SecretsAppOptions } from './secrets-app.ts';
import { secretsFront } from './secrets-front.ts';

export interface SecretsNodeOptions extends Omit<SecretsAppOptions, 'clientIp'> {
  /** The caller's address; default the socket's remote address. */
  clientIp?: (request: IncomingMessage) => string;
  /** Origins besides the service's own whose pages may change state (`front/cross-origin.ts`). */
  consoleOrigins?: () => readonly string[];
}

/**
 * The secrets service as a `node:http` request listener (what `npm start` serves): the shared node adapter
 * (`node-listener.ts`: the node request straight into the adapter-neutral request, no web objects) over
 * `secretsFront`, its refusals in Vault's `{"errors": [...]}`. A backslash in the path reaches the front as sent, which
 * refuses it with a message (400), logged like every other refusal.
 */
export function secretsNodeListener(
  options: SecretsNodeOptions,
): (request: IncomingMessage, response: ServerResponse) => void {
  const front = secretsFront({
    core: options.core,
    regions: options.regions ?? secretsRegionsFromEnvironment(process.env),
    ...(options.consoleOrigins ? { consoleOrigins: options.consoleOrigins } : {}),
  });
  return nodeListener(front, {
    refuse: (status, message) => jsonReply(status, { errors: [message] }),
    trustedProxies: options.trustedProxies ?? trustedProxiesFromEnvironment(process.env),
    clientIp: options.clientIp,
  });
}
