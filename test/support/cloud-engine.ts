import { googleEndpointVariables } from '../../packages/core/src/secrets/mounts/operator-settings.ts';
import { type GoogleEmulator, type GoogleEmulatorOptions, startGoogleEmulator } from '../emulators/google.ts';
import { type SecretsHarness, startSecrets } from './secrets-harness.ts';

/**
 * The operator configuration that points every Google API the cloud engine calls at the emulator: the server's
 * environment, as `npm start` or the stage config gives it (never a mount option: issue 23 §3).
 */
export const emulatedGoogleEnvironment = (google: GoogleEmulator): Record<string, string> => ({
  [googleEndpointVariables.iam_endpoint]: google.endpoints.iam,
  [googleEndpointVariables.iamcredentials_endpoint]: google.endpoints.iamCredentials,
  [googleEndpointVariables.resourcemanager_endpoint]: google.endpoints.resourceManager,
  [googleEndpointVariables.storage_endpoint]: google.endpoints.storage,
  [googleEndpointVariables.sts_endpoint]: google.endpoints.sts,
  [googleEndpointVariables.token_endpoint]: google.endpoints.oauth2Token,
});

/**
 * For a service running in this process (the harness, the Lambda handlers of test/deploy): the emulator as the
 * operator's configuration, set in this process's environment (each test file runs in its own worker).
 */
export function useEmulatedGoogle(google: GoogleEmulator): void {
  Object.assign(process.env, emulatedGoogleEnvironment(google));
}

export interface CloudEngine {
  h: SecretsHarness;
  google: GoogleEmulator;
  root: { email: string; credentials: string };
  /** A call with the root token. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response JSON
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

/**
 * A secrets service with the cloud engine mounted at `cloud/`, its endpoints pointed at a fresh Google
 * emulator (through the operator's configuration, this process's environment), project `proj-1`, and a root service account written to config.
 * The manual clock starts at the real time, since the emulator checks signed assertions against it.
 */
export async function startCloudEngine(
  options: GoogleEmulatorOptions & { configure?: boolean } = {},
): Promise<CloudEngine> {
  const google = await startGoogleEmulator(options);
  useEmulatedGoogle(google);
  const h = await startSecrets();
  h.clock.advance(Math.floor((Date.now() - h.clock.now()) / 1000));
  google.addProject('proj-1');
  const root = google.seedServiceAccount('proj-1', 'keyhaven-root');
  const call = (method: string, path: string, body?: unknown) => h.call(method, path, { token: h.rootToken, body });
  const mounted = await call('POST', '/v1/sys/mounts/cloud', {
    type: 'cloud',
    options: { retry_base_ms: '1' },
  });
  if (mounted.status !== 204) throw new Error(`mount failed: ${JSON.stringify(mounted.body)}`);
  if (options.configure !== false) {
    const configured = await call('POST', '/v1/cloud/config', { credentials: root.credentials });
    if (configured.status !== 204) throw new Error(`config failed: ${JSON.stringify(configured.body)}`);
  }
  return {
    h,
    google,
    root,
    call,
    async close() {
      await h.close();
      await google.close();
    },
  };
}
