/**
 * Mesh engine: credentials issued and revoked per second, end to end through the secrets app (the code a
 * Lambda runs) on DynamoDB Local, against the Consul emulator on loopback: each round is `GET mesh/creds/web`
 * (token created on the server, lease recorded) then `PUT sys/leases/revoke` (token deleted, lease removed).
 * Run: `node_modules/.bin/tsx test/bench/mesh-creds.bench.ts` (ROUNDS=n to change the count; BENCH_SMOKE=1: 5 rounds).
 */
import { startConsulEmulator } from '../emulators/consul.ts';
import { startBenchService } from './bench-service.ts';
import { figure, sized, smoke } from './summary.ts';

const rounds = sized('ROUNDS', 300, 5);
const warmup = smoke ? 2 : 20;

const service = await startBenchService(['system', 'mesh']);
const consul = await startConsulEmulator();
try {
  const { call } = service;
  const bootstrap = (await consul.request('PUT', '/v1/acl/bootstrap')).json as { SecretID: string };
  await consul.request('PUT', '/v1/acl/policy', { token: bootstrap.SecretID, body: { Name: 'web-read' } });
  await call('POST', '/v1/sys/mounts/mesh', { type: 'mesh' });
  await call('POST', '/v1/mesh/config/access', { address: consul.address, token: bootstrap.SecretID });
  await call('POST', '/v1/mesh/roles/web', { mesh_policies: 'web-read', service_identities: 'web:dc1', ttl: '1h' });

  const round = async () => {
    const creds = await call('GET', '/v1/mesh/creds/web');
    await call('PUT', '/v1/sys/leases/revoke', { lease_id: creds?.lease_id });
  };
  for (let i = 0; i < warmup; i++) await round();
  const started = performance.now();
  for (let i = 0; i < rounds; i++) await round();
  const seconds = (performance.now() - started) / 1000;
  const left = consul.tokens().length - 1; // the bootstrap token stays
  console.log(
    `mesh creds issue+revoke: ${(rounds / seconds).toFixed(1)}/s (${rounds} rounds in ${seconds.toFixed(2)} s, ` +
      `${((seconds / rounds) * 1000).toFixed(1)} ms each; one client, sequential; ${left} tokens left on the server)`,
  );
  figure('mesh-creds', 'mesh creds issue+revoke/s', rounds / seconds, '—', `${left} tokens left on the server`);
} finally {
  await consul.close();
  await service.stop();
}
