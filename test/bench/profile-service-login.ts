/**
 * Where a service-token JWT login's CPU goes (issue 28): warm logins through the secrets Lambda adapter (as
 * jwt-login.bench.ts drives them), under V8's sampling profiler (`node:inspector`, started after the warm-up, so
 * set-up and first-call compilation are left out). Prints self time grouped by package (our files by folder) and
 * the functions with the most self time, and writes the .cpuprofile (open it in Chrome DevTools) to PROFILE_OUT.
 * Not a bench: nothing is compared with a goal (benches-smoke.test.ts runs it with BENCH_SMOKE=1). Run: `node_modules/.bin/tsx test/bench/profile-service-login.ts`
 * (LOGINS=n, default 1000; ALG=RS256|ES256; TOKEN_TYPE=service|batch; ADAPTER=lambda|app). It also counts the
 * DynamoDB attempts the profiled logins make (more than one per service login means they contend or retry).
 * The sampled times are wall time on the main thread while it is not idle: on a loaded machine they include time
 * the thread was preempted, so read the shares, and the process CPU per login, not the absolute sample sums.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg } from 'node:os';
import { exportSPKI, generateKeyPair } from 'jose';
import { secretsFront } from '../../packages/core/src/http/secrets-front.ts';
import { secretsLambda } from '../../packages/core/src/http/secrets-lambda.ts';
import { benchIssuer, benchJwt, benchJwtRole, jwtLoginEvent, startBenchService } from './bench-service.ts';
import { sized } from './summary.ts';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

const logins = sized('LOGINS', 1000, 20);
const warm = sized('WARM_LOGINS', 200, 20);
const alg = (process.env.ALG ?? 'RS256') as 'RS256' | 'ES256';
const tokenType = process.env.TOKEN_TYPE ?? 'service';
const adapter = process.env.ADAPTER ?? 'lambda';
const out = process.env.PROFILE_OUT ?? `/tmp/keyhaven-${tokenType}-login-${alg}.cpuprofile`;
const concurrency = 16;
const users = 32;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Where a frame's code lives: a package, one of our folders, or V8/Node itself. */
function placeOf(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native or builtin)';
  const pkg = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (pkg) return pkg[1] as string;
  const ours = url.match(/\/(packages\/[^/]+\/src\/(?:[^/]+\/)?)/);
  if (ours) return ours[1] as string;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  return url.replace(/^file:\/\/.*\/work\/main\//, '');
}

// Added to the service's client before its first call (`startBenchService`'s `observe`): the DynamoDB calls of one warm
// login, with the keys they touch, while `capturing`; and while `counting`, every HTTP attempt the client makes (after
// the SDK's retries, and after the store's own retries of transactions cancelled for conflicts): more than one per
// login means logins are contending.
const calls: string[] = [];
let capturing = false;
let counting = false;
let attempts = 0;
const cancelled = new Map<string, number>();
const observe = (client: DynamoDBClient) => {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (capturing) {
        const input = args.input as {
          Key?: { pk?: { S?: string }; sk?: { S?: string } };
          Item?: { pk?: { S?: string }; sk?: { S?: string } };
          TransactItems?: Record<string, { Key?: unknown; Item?: { pk?: { S?: string } } }>[];
        };
        const key = input.Key ?? input.Item;
        const detail = input.TransactItems
          ? input.TransactItems.map((item) =>
              Object.entries(item).map(
                ([kind, body]) => `${kind} ${(body.Item?.pk ?? (body.Key as { pk?: { S?: string } })?.pk)?.S ?? '?'}`,
              ),
            ).join(', ')
          : `${key?.pk?.S ?? '?'} / ${key?.sk?.S ?? '?'}`;
        calls.push(`${context.commandName}: ${detail}`);
      }
      return next(args);
    },
    { step: 'build', name: 'profileCaptureCalls' },
  );
  client.middlewareStack.add(
    (next) => async (args) => {
      if (!counting) return next(args);
      attempts++;
      try {
        return await next(args);
      } catch (error) {
        const name = (error as Error).name;
        cancelled.set(name, (cancelled.get(name) ?? 0) + 1);
        throw error;
      }
    },
    { step: 'deserialize', name: 'profileCountAttempts' },
  );
};

const service = await startBenchService(['system', 'jwt'], { observe });
try {
  const { app, rootToken } = service;
  const call = async (method: string, url: string, body: unknown) => {
    const response = await app.request(url, {
      method,
      headers: { 'X-Secrets-Token': rootToken, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (response.status >= 300) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
  };
  const keys = await generateKeyPair(alg, { extractable: true });
  await call('POST', '/v1/sys/auth/jwt', { type: 'jwt' });
  await call('POST', '/v1/auth/jwt/config', {
    jwt_validation_pubkeys: [await exportSPKI(keys.publicKey)],
    bound_issuer: benchIssuer,
  });
  await call('POST', '/v1/auth/jwt/role/bench', benchJwtRole(tokenType));
  const tokens = await Promise.all(Array.from({ length: users }, (_, user) => benchJwt(alg, user, keys.privateKey)));
  const lambda = secretsLambda(secretsFront({ core: async () => service.core }));
  const login = async (index: number) => {
    const body = JSON.stringify({ role: 'bench', jwt: tokens[index % users] });
    if (adapter === 'app') {
      const response = await app.request('/v1/auth/jwt/login', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
      });
      await response.text();
      if (response.status !== 200) throw new Error(`login: ${response.status}`);
      return;
    }
    const result = await lambda(jwtLoginEvent(body));
    if (result.statusCode !== 200) throw new Error(`login: ${result.statusCode} ${result.body}`);
  };
  const run = async (count: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) await login(next++);
      }),
    );
  };
  await run(Math.max(warm, users)); // warm: entities exist, caches filled, code compiled

  capturing = true;
  await login(0);
  capturing = false;
  console.log(`one warm login's DynamoDB calls (${calls.length}):\n  ${calls.join('\n  ')}`);

  counting = true;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await run(logins);
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const failures = [...cancelled].map(([name, count]) => `${count} ${name}`).join(', ') || 'none failed';
  console.log(`DynamoDB attempts while profiling: ${(attempts / logins).toFixed(2)} per login (${failures})`);
  const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
  session.disconnect();
  writeFileSync(out, JSON.stringify(profile));

  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const selfUs = new Map<number, number>();
  for (const [index, id] of profile.samples.entries())
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const idle = [...selfUs]
    .filter(([id]) => byId.get(id)?.callFrame.functionName === '(idle)')
    .reduce((a, [, us]) => a + us, 0);
  const busy = total - idle;
  const places = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = (byId.get(id) as ProfileNode).callFrame;
    if (frame.functionName === '(idle)') continue;
    const place = placeOf(frame.url, frame.functionName);
    places.set(place, (places.get(place) ?? 0) + us);
    const fn = `${frame.functionName || '(anonymous)'} ${place}:${frame.lineNumber + 1}`;
    functions.set(fn, (functions.get(fn) ?? 0) + us);
  }
  const perLogin = (us: number) => (us / logins).toFixed(0).padStart(6);
  const share = (us: number) => `${((100 * us) / busy).toFixed(1)}%`.padStart(6);
  console.log(
    `${logins} warm ${tokenType}-token ${alg} logins through the ${adapter === 'app' ? 'node server app' : 'Lambda adapter'} at concurrency ${concurrency}: ` +
      `${(logins / seconds).toFixed(0)}/s; process CPU ${((cpu.user + cpu.system) / logins).toFixed(0)} µs/login (all threads); ` +
      `main thread sampled busy ${(busy / logins).toFixed(0)} µs/login; load average ${loadavg()
        .map((load) => load.toFixed(1))
        .join(' ')} (2 cores); profile: ${out}`,
  );
  const stackText = (id: number) => {
    const parts: string[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
      const frame = (byId.get(at) as ProfileNode).callFrame;
      parts.push(`${frame.functionName}@${placeOf(frame.url, frame.functionName)}`);
    }
    return parts.join(' ');
  };
  /** One bucket per sample, from its whole stack: the profiler, the verify, the SDK's parts, the socket, our code. */
  const bucketOf = (id: number) => {
    const frame = (byId.get(id) as ProfileNode).callFrame;
    const stack = stackText(id);
    const place = placeOf(frame.url, frame.functionName);
    if (stack.includes('node:inspector')) return 'the profiler itself';
    if (stack.includes('rsaSignVerify') || stack.includes('ecdsaSignVerify') || /@jose\b/.test(stack))
      return 'JWT signature check (jose, WebCrypto)';
    if (/@@(smithy|aws-sdk)\//.test(stack) || /^@(smithy|aws-sdk)\//.test(place)) {
      if (stack.includes('signature-v4')) return 'AWS SDK: SigV4 signing';
      if (stack.includes('lib-dynamodb') || stack.includes('util-dynamodb'))
        return 'AWS SDK: util-dynamodb marshalling';
      if (/writev|_http|node:net/.test(stack)) return 'node http client and socket (the request to DynamoDB)';
      return 'AWS SDK: other middleware, serde, endpoint';
    }
    if (/writev|@node:_http|@node:net/.test(stack)) return 'node http client and socket (the request to DynamoDB)';
    if (place.startsWith('packages/')) return `ours: ${place}`;
    if (frame.functionName === '(garbage collector)' || frame.functionName === '(program)') return frame.functionName;
    return `other: ${place}`;
  };
  const buckets = new Map<string, number>();
  for (const [id, us] of selfUs) {
    if ((byId.get(id) as ProfileNode).callFrame.functionName === '(idle)') continue;
    buckets.set(bucketOf(id), (buckets.get(bucketOf(id)) ?? 0) + us);
  }
  console.log('\nmain-thread samples by what the whole stack was doing (µs per login, share of busy samples):');
  for (const [bucket, us] of [...buckets].sort((a, b) => b[1] - a[1]).slice(0, 20))
    console.log(`${perLogin(us)} ${share(us)}  ${bucket}`);
  console.log('\nself time on the main thread by place (µs per login, share of busy samples):');
  for (const [place, us] of [...places].sort((a, b) => b[1] - a[1]).slice(0, 25))
    console.log(`${perLogin(us)} ${share(us)}  ${place}`);
  const stackOf = (id: number) => {
    const names: string[] = [];
    for (let at = parents.get(id); at !== undefined && names.length < 6; at = parents.get(at)) {
      const frame = (byId.get(at) as ProfileNode).callFrame;
      if (frame.functionName) names.push(`${frame.functionName}@${placeOf(frame.url, frame.functionName)}`);
    }
    return names.join(' < ');
  };
  for (const name of ['writev', 'run', 'init', 'digest']) {
    const stacks = new Map<string, number>();
    for (const [id, us] of selfUs)
      if ((byId.get(id) as ProfileNode).callFrame.functionName === name)
        stacks.set(stackOf(id), (stacks.get(stackOf(id)) ?? 0) + us);
    console.log(`\nnative ${name}: its callers`);
    for (const [stack, us] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, 4))
      console.log(`${perLogin(us)} ${share(us)}  ${stack}`);
  }
  console.log('\nfunctions with the most self time:');
  for (const [fn, us] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, 30))
    console.log(`${perLogin(us)} ${share(us)}  ${fn}`);
} finally {
  await service.stop();
}
