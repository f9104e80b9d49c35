/**
 * JWT login: logins per second and latency at concurrency 16, end to end through the secrets app (the code
 * a Lambda runs) on DynamoDB Local, for RS256 and ES256 tokens and for service tokens (stored in the table)
 * and batch tokens (sealed into themselves, no write). In the same run a bare `jose` verification loop of the
 * same tokens at the same concurrency gives the ceiling; the ratio is login throughput over it.
 * The machine is shared and noisy, so the scenarios run interleaved for ROUNDS rounds and the best round of
 * each is shown (the ratio compares best with best). CPU per operation is this process's `process.cpuUsage()` (user +
 * system) over a scenario divided by its operations, the lowest of the rounds: it compares a login with a bare
 * verification whatever the thread pool does (DynamoDB Local is another process and not counted).
 * Run: `node_modules/.bin/tsx test/bench/jwt-login.bench.ts` (LOGINS=n for bare and batch, default 3000;
 * service-token logins write to DynamoDB Local and run LOGINS/5; ROUNDS=n, default 3).
 */
import { loadavg } from 'node:os';
import { type CryptoKey, exportSPKI, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { startBenchService } from './bench-service.ts';

const logins = Number(process.env.LOGINS ?? 3000);
const rounds = Number(process.env.ROUNDS ?? 3);
const concurrency = 16;
const users = 64;

/** Runs `count` calls of `task` with `concurrency` in flight; returns throughput and latency percentiles. */
async function measure(count: number, task: (index: number) => Promise<void>) {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const index = next++;
        const begin = performance.now();
        await task(index);
        latencies.push(performance.now() - begin);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  // This process's CPU (user + system) per operation; DynamoDB Local is another process and not counted.
  return { perSecond: count / seconds, p50: at(0.5), p99: at(0.99), cpuUs: (cpu.user + cpu.system) / count };
}

const service = await startBenchService(['system', 'jwt']);
try {
  const { app, rootToken } = service;
  const call = async (method: string, url: string, body: unknown, token?: string) => {
    const response = await app.request(url, {
      method,
      headers: token ? { 'X-Secrets-Token': token } : {},
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${url}: ${response.status} ${text}`);
    return text;
  };

  const keys = {
    RS256: await generateKeyPair('RS256', { extractable: true }),
    ES256: await generateKeyPair('ES256', { extractable: true }),
  };
  await call('POST', '/v1/sys/auth/jwt', { type: 'jwt' }, rootToken);
  await call('POST', '/v1/auth/jwt/config', { jwt_validation_pubkeys: [await exportSPKI(keys.RS256.publicKey), await exportSPKI(keys.ES256.publicKey)], bound_issuer: 'https://ci.example' }, rootToken);
  for (const type of ['service', 'batch']) {
    const role = { role_type: 'jwt', user_claim: 'sub', bound_audiences: 'keyhaven', groups_claim: 'groups', token_policies: 'reader', token_ttl: '1h', token_type: type };
    await call('POST', `/v1/auth/jwt/role/${type}`, role, rootToken);
  }

  const sign = (alg: keyof typeof keys, user: number, privateKey: CryptoKey) =>
    new SignJWT({ iss: 'https://ci.example', aud: 'keyhaven', sub: `user-${user}`, groups: ['builders'] })
      .setProtectedHeader({ alg })
      .setIssuedAt()
      .setExpirationTime('2h')
      .sign(privateKey);

  type Result = Awaited<ReturnType<typeof measure>>;
  const best = new Map<string, Result>();
  const keep = (name: string, result: Result) => {
    const previous = best.get(name);
    if (!previous) best.set(name, result);
    else best.set(name, { ...(result.perSecond > previous.perSecond ? result : previous), cpuUs: Math.min(result.cpuUs, previous.cpuUs) });
  };
  const tokens = {
    RS256: await Promise.all(Array.from({ length: users }, (_, user) => sign('RS256', user, keys.RS256.privateKey))),
    ES256: await Promise.all(Array.from({ length: users }, (_, user) => sign('ES256', user, keys.ES256.privateKey))),
  };
  const login = (alg: keyof typeof keys, type: string) => (index: number) =>
    call('POST', '/v1/auth/jwt/login', { role: type, jwt: tokens[alg][index % users] }).then(() => undefined);
  // The same request refused before any signature check (a JWT with a bad header): the app, body, config and role
  // reads a login does besides the verify and the token it mints, to show where the rest of a login's CPU goes.
  const refused = async () => {
    const response = await app.request('/v1/auth/jwt/login', { method: 'POST', body: JSON.stringify({ role: 'batch', jwt: 'e30.e30.c2ln' }) });
    await response.text();
    if (response.status !== 400) throw new Error(`refused login: ${response.status}`);
  };
  const verify = (alg: keyof typeof keys) => async (index: number) =>
    void (await jwtVerify(tokens[alg][index % users] as string, keys[alg].publicKey, { algorithms: [alg], issuer: 'https://ci.example', audience: 'keyhaven' }));
  // Warm-up: every user's entity exists and the config, role and key caches are filled.
  for (const alg of ['RS256', 'ES256'] as const) {
    await measure(200, verify(alg));
    for (const type of ['service', 'batch']) await measure(users * 2, login(alg, type));
  }
  for (let round = 0; round < rounds; round++) {
    keep('refused', await measure(logins, refused));
    for (const alg of ['RS256', 'ES256'] as const) {
      keep(`${alg} bare`, await measure(logins, verify(alg)));
      keep(`${alg} batch`, await measure(logins, login(alg, 'batch')));
      keep(`${alg} service`, await measure(Math.ceil(logins / 5), login(alg, 'service')));
    }
  }
  const rows: string[][] = [];
  for (const alg of ['RS256', 'ES256'] as const) {
    const bare = best.get(`${alg} bare`) as Result;
    rows.push([`${alg} bare jose jwtVerify`, bare.perSecond.toFixed(0), bare.p50.toFixed(2), bare.p99.toFixed(2), '1.00', bare.cpuUs.toFixed(0), '1.00']);
    for (const type of ['service', 'batch']) {
      const result = best.get(`${alg} ${type}`) as Result;
      rows.push([`${alg} login, ${type} token`, result.perSecond.toFixed(0), result.p50.toFixed(2), result.p99.toFixed(2), (result.perSecond / bare.perSecond).toFixed(2), result.cpuUs.toFixed(0), (result.cpuUs / bare.cpuUs).toFixed(2)]);
    }
  }
  const floor = best.get('refused') as Result;
  rows.push(['login refused before verify (no mint)', floor.perSecond.toFixed(0), floor.p50.toFixed(2), floor.p99.toFixed(2), '', floor.cpuUs.toFixed(0), '']);
  const header = ['scenario (concurrency 16)', 'per second', 'p50 ms', 'p99 ms', 'ratio to bare jose', 'CPU µs/op', 'CPU ratio to bare'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: string[]) => cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join('  ');
  console.log(`\nJWT login: best of ${rounds} rounds, ${logins} bare verifications and batch logins, ${Math.ceil(logins / 5)} service logins per round, ${users} distinct users, Node ${process.version}\n`);
  console.log(line(header));
  for (const row of rows) console.log(line(row));
  console.log(`load average now: ${loadavg().map((load) => load.toFixed(1)).join(' ')} (2 cores)`);
} finally {
  await service.stop();
}
