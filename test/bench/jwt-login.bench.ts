/**
 * JWT login: logins per second, latency and CPU per login at concurrency 16, for RS256 and ES256 tokens, for batch
 * tokens (sealed into themselves, no write) and service tokens (stored in the table), on DynamoDB Local.
 * A login goes in as API Gateway's v2 event through the secrets Lambda's adapter (`secrets-lambda.ts` around
 * `secretsFront`: the code a secrets function runs), and once more as a web Request through the web-object form of the
 * service (`secrets-app.ts`, which in-process callers use), which builds web Request and Response objects around the
 * same service. (`npm start` serves `secrets-node.ts`, a plain node:http listener without web objects.)
 * In the same run a bare `jose` verification loop of the same tokens at the same concurrency gives the ceiling, and
 * the service-token login's floor (issue 28): the same bare verification plus the very `TransactWriteItems` a
 * service login sends (captured from one login at the client's middleware, already marshalled, its token hash and
 * accessor replaced by fresh ones each time), sent straight through a plain `DynamoDBClient`.
 * The machine is shared and noisy, so the scenarios run interleaved for ROUNDS rounds and the best round of each is
 * shown (throughput best with best). CPU per operation is the lowest over the rounds of this process's
 * `process.cpuUsage()` (every thread: the main thread, libuv's pool where WebCrypto verifies, V8's GC and compiler)
 * divided by the operations, and of the main thread's alone (`process.threadCpuUsage()`, Node 23.9+). DynamoDB Local
 * is another process and not counted.
 * Run: `npx tsx test/bench/jwt-login.bench.ts` (npx, so Node 24 runs it; LOGINS=n for bare and batch, default 3000;
 * service-token logins write to DynamoDB Local and run LOGINS/5; ROUNDS=n, default 3). BENCH_SMOKE=1: 40 logins,
 * 1 round, 8 users (benches-smoke.test.ts).
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import {
  DynamoDBClient,
  TransactWriteItemsCommand,
  type TransactWriteItemsCommandInput,
} from '@aws-sdk/client-dynamodb';
import { exportSPKI, generateKeyPair, jwtVerify } from 'jose';
import { secretsFront } from '../../packages/core/src/http/secrets-front.ts';
import { secretsLambda } from '../../packages/core/src/http/secrets-lambda.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { benchIssuer, benchJwt, benchJwtRole, jwtLoginEvent, startBenchService } from './bench-service.ts';
import { collectGarbage, figure, sized, smoke } from './summary.ts';

const logins = sized('LOGINS', 3000, 40);
const rounds = sized('ROUNDS', 3, 1);
const concurrency = smoke ? 4 : 16;
const users = smoke ? 8 : 64;

/** A fresh value shaped like `value` (hex stays hex, anything else becomes base62-ish), of the same length. */
const freshLike = (value: string) =>
  /^[0-9a-f]+$/.test(value)
    ? randomBytes(Math.ceil(value.length / 2))
        .toString('hex')
        .slice(0, value.length)
    : randomBytes(value.length).toString('base64url').replace(/[-_]/g, 'x').slice(0, value.length);

/** `input` with every occurrence of each `replacements` key inside its strings replaced; binary values are kept. */
function rewrite<T>(input: T, replacements: Map<string, string>): T {
  if (typeof input === 'string') {
    let out: string = input;
    for (const [from, to] of replacements) out = out.split(from).join(to);
    return out as T;
  }
  if (Array.isArray(input)) return input.map((each) => rewrite(each, replacements)) as T;
  if (input && typeof input === 'object' && !(input instanceof Uint8Array)) {
    return Object.fromEntries(Object.entries(input).map(([key, value]) => [key, rewrite(value, replacements)])) as T;
  }
  return input;
}

/** The token hash and accessor a service login's transaction writes (its `token#…` and `accessor#…` items). */
function uniqueParts(input: TransactWriteItemsCommandInput): string[] {
  const parts: string[] = [];
  for (const item of input.TransactItems ?? []) {
    const pk = item.Put?.Item?.pk?.S;
    if (pk?.startsWith('token#')) parts.push(pk.slice('token#'.length));
    if (pk?.startsWith('accessor#')) parts.push(pk.slice('accessor#'.length));
  }
  return parts;
}

/** This thread's CPU in µs, where Node can tell (23.9+); NaN otherwise. */
const mainThreadCpu = () => {
  const usage = (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage?.();
  return usage ? usage.user + usage.system : Number.NaN;
};

/** `count` calls of `task`, `concurrency` in flight at a time; returns their latencies. */
async function drive(count: number, task: (index: number) => Promise<void>): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
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
  return latencies;
}

/**
 * Runs `count` calls of `task` with `concurrency` in flight; returns throughput and latency percentiles. First, a full
 * garbage collection and a tenth as many untimed calls: what the previous scenario left behind (its garbage above all)
 * is paid there, not charged to this one. (Without them, whichever scenario ran right after the bare verify loop cost
 * up to twice the CPU it costs after any other.)
 */
async function measure(count: number, task: (index: number) => Promise<void>) {
  collectGarbage();
  await drive(Math.ceil(count / 10), task);
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const mainBefore = mainThreadCpu();
  const latencies = await drive(count, task);
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const main = mainThreadCpu() - mainBefore;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  // This process's CPU (user + system) per operation; DynamoDB Local is another process and not counted.
  return {
    perSecond: count / seconds,
    p50: at(0.5),
    p99: at(0.99),
    cpuUs: (cpu.user + cpu.system) / count,
    mainUs: main / count,
  };
}

// The floor of a service login: capture the DynamoDB calls of one warm login, to keep its TransactWriteItems.
const sent: { command: string; input: unknown }[] = [];
let capturing = false;
const service = await startBenchService(['system', 'jwt'], {
  observe: (client) =>
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (capturing) sent.push({ command: context.commandName as string, input: structuredClone(args.input) });
        return next(args);
      },
      { step: 'build', name: 'benchCaptureCalls' },
    ),
});
const rawClient = new DynamoDBClient(localClientConfig(service.dynamoEndpoint));
try {
  const { app, rootToken } = service;
  const call = async (method: string, url: string, body: unknown, token?: string) => {
    const response = await app.request(url, {
      method,
      headers: { 'Content-Type': 'application/json', ...(token ? { 'X-Secrets-Token': token } : {}) },
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
  await call(
    'POST',
    '/v1/auth/jwt/config',
    {
      jwt_validation_pubkeys: [await exportSPKI(keys.RS256.publicKey), await exportSPKI(keys.ES256.publicKey)],
      bound_issuer: benchIssuer,
    },
    rootToken,
  );
  for (const type of ['service', 'batch']) {
    await call('POST', `/v1/auth/jwt/role/${type}`, benchJwtRole(type), rootToken);
  }

  type Result = Awaited<ReturnType<typeof measure>>;
  const best = new Map<string, Result>();
  const keep = (name: string, result: Result) => {
    const previous = best.get(name);
    if (!previous) best.set(name, result);
    else
      best.set(name, {
        ...(result.perSecond > previous.perSecond ? result : previous),
        cpuUs: Math.min(result.cpuUs, previous.cpuUs),
        mainUs: Math.min(result.mainUs, previous.mainUs),
      });
  };
  const tokens = {
    RS256: await Promise.all(
      Array.from({ length: users }, (_, user) => benchJwt('RS256', user, keys.RS256.privateKey)),
    ),
    ES256: await Promise.all(
      Array.from({ length: users }, (_, user) => benchJwt('ES256', user, keys.ES256.privateKey)),
    ),
  };
  // The Lambda adapter over the bench's core: the event API Gateway's HTTP API delivers for a login.
  const lambda = secretsLambda(secretsFront({ core: async () => service.core }));
  const viaLambda = async (body: string, status: number) => {
    const result = await lambda(jwtLoginEvent(body));
    if (result.statusCode !== status)
      throw new Error(`login through the Lambda adapter: ${result.statusCode} ${result.body}`);
  };
  const login = (alg: keyof typeof keys, type: string) => (index: number) =>
    viaLambda(JSON.stringify({ role: type, jwt: tokens[alg][index % users] }), 200);
  const loginViaApp = (alg: keyof typeof keys) => (index: number) =>
    call('POST', '/v1/auth/jwt/login', { role: 'batch', jwt: tokens[alg][index % users] }).then(() => undefined);
  // The same request refused before any signature check (a JWT with a bad header): the adapter, body, config and role
  // reads a login does besides the verify and the token it mints, to show where the rest of a login's CPU goes.
  const refused = () => viaLambda(JSON.stringify({ role: 'batch', jwt: 'e30.e30.c2ln' }), 400);
  const verify = (alg: keyof typeof keys) => async (index: number) =>
    void (await jwtVerify(tokens[alg][index % users] as string, keys[alg].publicKey, {
      algorithms: [alg],
      issuer: benchIssuer,
      audience: 'keyhaven',
    }));
  // Warm-up: every user's entity exists and the config, role and key caches are filled.
  for (const alg of ['RS256', 'ES256'] as const) {
    await measure(smoke ? 10 : 200, verify(alg));
    for (const type of ['service', 'batch']) await measure(users * 2, login(alg, type));
    await measure(smoke ? 10 : 200, loginViaApp(alg));
  }

  // The jwt backend caches config, role and entity for 5 s per process (process-cache.ts): log in once first so the
  // captured login is a warm one, as nearly every login is at any steady rate.
  await login('RS256', 'service')(0);
  capturing = true;
  await login('RS256', 'service')(0);
  capturing = false;
  const transaction = sent.find((each) => each.command === 'TransactWriteItemsCommand')?.input as
    | TransactWriteItemsCommandInput
    | undefined;
  if (!transaction)
    throw new Error(
      `a service login sent no TransactWriteItems (sent: ${sent.map((each) => each.command).join(', ') || 'nothing'})`,
    );
  const unique = uniqueParts(transaction);
  if (unique.length === 0)
    throw new Error('the service login transaction has no token# or accessor# item to make unique');
  console.log(
    `a warm service login sends ${sent.length} DynamoDB call(s): ${sent.map((each) => each.command).join(', ')}; ` +
      `its transaction has ${transaction.TransactItems?.length} items (${(transaction.TransactItems ?? []).map((item) => Object.keys(item)[0]).join(', ')})`,
  );
  const rawTransaction = async () => {
    const fresh = rewrite(transaction, new Map(unique.map((part) => [part, freshLike(part)])));
    await rawClient.send(new TransactWriteItemsCommand(fresh));
  };
  const floor = (alg: keyof typeof keys) => async (index: number) => {
    await verify(alg)(index);
    await rawTransaction();
  };
  await measure(smoke ? 5 : 50, floor('RS256'));
  for (let round = 0; round < rounds; round++) {
    keep('refused', await measure(logins, refused));
    for (const alg of ['RS256', 'ES256'] as const) {
      keep(`${alg} bare`, await measure(logins, verify(alg)));
      keep(`${alg} batch`, await measure(logins, login(alg, 'batch')));
      keep(`${alg} batch app`, await measure(logins, loginViaApp(alg)));
      keep(`${alg} service`, await measure(Math.ceil(logins / 5), login(alg, 'service')));
      keep(`${alg} floor`, await measure(Math.ceil(logins / 5), floor(alg)));
    }
  }
  const rows: string[][] = [];
  const cells = (result: Result, bare: Result | undefined) => [
    result.perSecond.toFixed(0),
    result.p50.toFixed(2),
    result.p99.toFixed(2),
    bare ? (result.perSecond / bare.perSecond).toFixed(2) : '',
    result.cpuUs.toFixed(0),
    bare ? (result.cpuUs / bare.cpuUs).toFixed(2) : '',
    Number.isNaN(result.mainUs) ? 'n/a' : result.mainUs.toFixed(0),
  ];
  for (const alg of ['RS256', 'ES256'] as const) {
    const bare = best.get(`${alg} bare`) as Result;
    rows.push([`${alg} bare jose jwtVerify`, ...cells(bare, bare)]);
    rows.push([`${alg} login, batch token (Lambda adapter)`, ...cells(best.get(`${alg} batch`) as Result, bare)]);
    rows.push([`${alg} login, batch token (web-object app)`, ...cells(best.get(`${alg} batch app`) as Result, bare)]);
    rows.push([`${alg} login, service token (Lambda adapter)`, ...cells(best.get(`${alg} service`) as Result, bare)]);
    rows.push([
      `${alg} floor: bare verify + raw TransactWriteItems`,
      ...cells(best.get(`${alg} floor`) as Result, bare),
    ]);
  }
  rows.push(['login refused before verify (no mint)', ...cells(best.get('refused') as Result, undefined)]);
  const header = [
    'scenario (concurrency 16)',
    'per second',
    'p50 ms',
    'p99 ms',
    'ratio to bare jose',
    'CPU µs/op',
    'CPU ratio to bare',
    'main thread µs/op',
  ];
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)))
      .join('  ');
  console.log(
    `\nJWT login: best of ${rounds} rounds, ${logins} bare verifications and batch logins (each way), ${Math.ceil(logins / 5)} service logins per round, ${users} distinct users, Node ${process.version}\n`,
  );
  console.log(line(header));
  for (const row of rows) console.log(line(row));
  console.log(
    `load average now: ${loadavg()
      .map((load) => load.toFixed(1))
      .join(' ')} (2 cores)`,
  );
  console.log('');
  for (const alg of ['RS256', 'ES256'] as const) {
    const cpu = (name: string) => (best.get(`${alg} ${name}`) as Result).cpuUs;
    figure(
      'jwt-login',
      `${alg} service login CPU / floor (verify + raw TransactWriteItems)`,
      cpu('service') / cpu('floor'),
      '<= 1.5',
      `${cpu('service').toFixed(0)} µs vs ${cpu('floor').toFixed(0)} µs`,
    );
  }
  for (const alg of ['RS256', 'ES256'] as const) {
    const cpu = (name: string) => (best.get(`${alg} ${name}`) as Result).cpuUs;
    figure(
      'jwt-login',
      `${alg} service login CPU / bare verify`,
      cpu('service') / cpu('bare'),
      '— (was 18–56×)',
      `${cpu('service').toFixed(0)} µs`,
    );
  }
  for (const alg of ['RS256', 'ES256'] as const) {
    const cpu = (name: string) => (best.get(`${alg} ${name}`) as Result).cpuUs;
    figure(
      'jwt-login',
      `${alg} batch login CPU / bare verify (Lambda adapter)`,
      cpu('batch') / cpu('bare'),
      '<= 2',
      `web-object app: ${(cpu('batch app') / cpu('bare')).toFixed(2)}`,
    );
  }
} finally {
  rawClient.destroy();
  await service.stop();
}
