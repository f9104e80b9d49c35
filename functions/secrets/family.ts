import { allSecretsFamilies, loadFamily, type SecretsFamily } from '@keyhaven/core/secrets/family-list.ts';
import { secretsHandler } from './app.ts';

/**
 * The Lambda of one endpoint family (`Secrets-<family>` in stacks/SecretsApi.ts): the family `KEYHAVEN_FAMILY` names
 * (`system`: `sys/*`, `auth/token/*`, `identity/*`; an engine's or a login method's mounts), its backends loaded on the
 * first event from their own chunk, so the function loads that family's code and no other's.
 *
 * One entry for every family rather than a file per family: adding an engine touches its folder and the family list
 * only, and the bundle's other families are chunks that a cold start never loads.
 */
type Handler = ReturnType<typeof secretsHandler>;

const families = new Map<SecretsFamily, Promise<Handler>>();

function familyHandler(name = process.env.KEYHAVEN_FAMILY): Promise<Handler> {
  const family = allSecretsFamilies.find((known) => known === name);
  if (!family)
    return Promise.reject(
      new Error(`KEYHAVEN_FAMILY must name an endpoint family (${allSecretsFamilies.join(', ')}), not "${name ?? ''}"`),
    );
  let handler = families.get(family);
  if (!handler) {
    handler = loadFamily(family).then(secretsHandler);
    handler.catch(() => families.delete(family));
    families.set(family, handler);
  }
  return handler;
}

/** The family is read from the environment before anything is awaited. */
export function handler(event: Parameters<Handler>[0]): ReturnType<Handler> {
  const serving = familyHandler();
  return serving.then((serve) => serve(event)) as ReturnType<Handler>;
}
