/**
 * The directory engine against a real local slapd and DynamoDB Local, through the web-object app in process (what
 * a Lambda runs): static-cred reads/s, dynamic `creds` issue+revoke/s (two directory round trips and a
 * lease each), library check-out+check-in round trips/s (each check-in sets a new password), and one bind with a
 * stored password as a read's or the account check's verification makes it (connect, bind, unbind: issue 43).
 * Figures only: nothing is asserted. Run: `node_modules/.bin/tsx test/bench/ldap.bench.ts`
 * (BENCH_SECONDS=n per case, BENCH_CONCURRENCY=n; BENCH_SMOKE=1: half a second per case, 2 workers).
 */
import { baseDn, dynamicDn, managerDn, managerPassword, serviceAccounts, startSlapd } from '../support/slapd.ts';
import { startBenchService } from './bench-service.ts';
import { figure, sized, smoke } from './summary.ts';

const seconds = sized('BENCH_SECONDS', 5, 0.5);
const concurrency = sized('BENCH_CONCURRENCY', 8, 2);

async function measure(name: string, figureName: string, workers: number, once: (worker: number) => Promise<boolean>) {
  const until = performance.now() + seconds * 1000;
  const latencies: number[] = [];
  let failures = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      while (performance.now() < until) {
        const begun = performance.now();
        if (!(await once(worker))) failures++;
        latencies.push(performance.now() - begun);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (quantile: number) =>
    (latencies[Math.min(latencies.length - 1, Math.floor(quantile * latencies.length))] ?? Number.NaN).toFixed(1);
  console.log(
    `${name.padEnd(44)} ${(latencies.length / elapsed).toFixed(1).padStart(8)}/s  p50 ${at(0.5).padStart(6)} ms  p99 ${at(0.99).padStart(6)} ms  n=${latencies.length} failures=${failures} workers=${workers}`,
  );
  if (failures > 0) process.exitCode = 1; // the figures are not valid
  figure(
    'ldap',
    figureName,
    latencies.length / elapsed,
    '—',
    `p99 ${at(0.99)} ms, ${workers} workers${failures > 0 ? `, ${failures} FAILED` : ''}`,
  );
}

const [service, slapd] = await Promise.all([startBenchService(['system', 'ldap']), startSlapd()]);
try {
  const { request: call, call: must } = service;

  await must('POST', '/v1/sys/mounts/ldap', { type: 'ldap' });
  await must('POST', '/v1/ldap/config', {
    binddn: managerDn,
    bindpass: managerPassword,
    url: slapd.url,
    userdn: baseDn,
  });
  await must('POST', '/v1/ldap/static-role/alice', { username: 'alice', rotation_period: '24h' });
  await must('POST', '/v1/ldap/role/bench', {
    creation_ldif: `dn: cn={{.Username}},${dynamicDn}\nobjectClass: inetOrgPerson\ncn: {{.Username}}\nsn: bench\nuserPassword: {{.Password}}\n`,
    deletion_ldif: `dn: cn={{.Username}},${dynamicDn}\nchangetype: delete\n`,
    username_template: '{{ printf "b_%s" (random 16) }}',
  });
  const pool = serviceAccounts.slice(0, concurrency);
  await must('POST', '/v1/ldap/library/bench', { service_account_names: pool, disable_check_in_enforcement: true });

  console.log(`directory engine, ${seconds}s per case (DynamoDB Local + slapd on this machine)`);
  await measure(
    'static-cred read',
    'ldap static-cred reads/s',
    smoke ? 2 : 16,
    async () => (await call('GET', '/v1/ldap/static-cred/alice')).status === 200,
  );
  const aliceCred = (await must('GET', '/v1/ldap/static-cred/alice')) as { data: { password: string } };
  const alicePassword = aliceCred.data.password;
  await measure('one verification bind (connect, bind, unbind)', 'ldap verification binds/s', 1, async () =>
    slapd.canBind(`cn=alice,ou=people,${baseDn}`, alicePassword),
  );
  await measure('dynamic creds issue + revoke', 'ldap dynamic creds issue+revoke/s', concurrency, async () => {
    const issued = await call('GET', '/v1/ldap/creds/bench');
    if (issued.status !== 200) return false;
    return (await call('PUT', '/v1/sys/leases/revoke', { lease_id: issued.body.lease_id })).status === 204;
  });
  await measure('library check-out + check-in', 'ldap library check-out+in/s', concurrency, async () => {
    const out = await call('POST', '/v1/ldap/library/bench/check-out');
    if (out.status !== 200) return false;
    const back = await call('POST', '/v1/ldap/library/bench/check-in', {
      service_account_names: [out.body.data.service_account_name],
    });
    return back.status === 200;
  });
} finally {
  await slapd.close();
  await service.stop();
}
