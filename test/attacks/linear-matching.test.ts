/**
 * Issue 39 §1: every pattern matched against input an attacker chooses is matched in linear time. Three places turned a go-glob
 * pattern into a backtracking JavaScript `RegExp` (`^.*-.*-.*-prod$`): token roles' policy globs, JWT `bound_claims`
 * of type `glob`, and the scheduler's namespace rules. `*-*-*-prod` against a few thousand dashes froze the process
 * for tens of seconds per request at each of them (cubic), `*a*a*…*b` against 35 `a`s for ~30 s (exponential). All
 * three now use `lib/glob.ts`, whose work is counted here in steps, never timed: at most 2·(pattern + subject)
 * for any pattern and subject. Its answers are go-glob's own (`test/differential/go-glob.test.ts`).
 *
 * The same for the `Authorization: Bearer` header of both services through the Lambda adapter (API Gateway hands on
 * a line separator U+2028, which node's own parser never gives): `^Bearer\s+(.+)$` was quadratic in the spaces before
 * one.
 *
 * On the code before the fix the site tests do not answer within the test timeout.
 */
import fc from 'fast-check';
import { exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lambdaHandler } from '../../packages/core/src/http/lambda-handler.ts';
import { secretsFront } from '../../packages/core/src/http/secrets-front.ts';
import { secretsLambda } from '../../packages/core/src/http/secrets-lambda.ts';
import { Glob, type GlobSteps, globMatches } from '../../packages/core/src/lib/glob.ts';
import { schedulerFront } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';
import { gatewayEvent } from './lambda-event.ts';

/** The subjects of the reproduction, longer: the old code needed minutes for each. */
const dashes = '-'.repeat(5_000);
const cubic = '*-*-*-prod';
const exponential = `${'*a'.repeat(12)}*b`;

/** A plain dynamic-programming glob, for the property's answers (quadratic, on short inputs only). */
function reference(pattern: string, subject: string): boolean {
  let row = Array.from({ length: subject.length + 1 }, (_, j) => j === 0);
  for (const char of pattern) {
    const next = [char === '*' && (row[0] as boolean)];
    for (let j = 1; j <= subject.length; j++)
      next[j] =
        char === '*' ? (row[j] as boolean) || (next[j - 1] as boolean) : !!row[j - 1] && subject[j - 1] === char;
    row = next;
  }
  return row[subject.length] as boolean;
}

describe('the glob matcher (lib/glob.ts) counts its steps', () => {
  const piece = fc.constantFrom('a', 'b', 'ab', 'aab', '-', '-prod', '*', '**');
  const pattern = fc.array(piece, { minLength: 1, maxLength: 60 }).map((pieces) => pieces.join(''));
  const subject = fc
    .tuple(
      fc.constantFrom('a', 'b', 'ab', '-', 'aab'),
      fc.integer({ min: 0, max: 4_000 }),
      fc.constantFrom('', 'b', 'x'),
    )
    .map(([unit, times, tail]) => unit.repeat(times) + tail);

  it('takes at most 2·(pattern + subject) steps for any pattern and subject', () => {
    fc.assert(
      fc.property(pattern, subject, (p, s) => {
        const steps: GlobSteps = { count: 0 };
        globMatches(p, s, steps);
        expect(steps.count).toBeLessThanOrEqual(2 * (p.length + s.length));
      }),
      { numRuns: 400, seed: 39 },
    );
  });

  it('answers as a plain glob does (short inputs, against a dynamic-programming matcher)', () => {
    fc.assert(
      fc.property(pattern, fc.string({ unit: fc.constantFrom('a', 'b', '-', 'p'), maxLength: 30 }), (p, s) => {
        expect(globMatches(p, s)).toBe(reference(p, s));
      }),
      { numRuns: 2_000, seed: 39 },
    );
  });

  it("the issue's patterns: linear in the subject, where a RegExp was cubic and exponential", () => {
    for (const [glob, unit] of [
      [cubic, '-'],
      [exponential, 'a'],
    ] as const) {
      const counts = [1_000, 10_000, 100_000].map((length) => {
        const steps: GlobSteps = { count: 0 };
        expect(globMatches(glob, unit.repeat(length), steps)).toBe(false);
        return steps.count;
      });
      // Ten times the subject, ten times the work (at most): no polynomial, no exponential.
      expect(counts[1] as number).toBeLessThanOrEqual(10 * (counts[0] as number) + 2 * glob.length);
      expect(counts[2] as number).toBeLessThanOrEqual(10 * (counts[1] as number) + 2 * glob.length);
      expect(counts[2] as number).toBeLessThanOrEqual(2 * (100_000 + glob.length));
    }
    const once = new Glob(cubic);
    expect(once.matches('us-east-1-prod')).toBe(true);
    expect(once.matches(`${dashes}prod`)).toBe(true);
  });
});

describe('each site that matched globs answers at once (secrets service)', () => {
  let h: SecretsService;
  let privateKey: CryptoKey;
  const root = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: h.rootToken, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    h = await startSecretsInMemory();
    const pair = await generateKeyPair('ES256', { extractable: true });
    privateKey = pair.privateKey;
    expect((await root('POST', '/v1/sys/auth/jwt', { type: 'jwt' })).status).toBe(204);
    expect(
      (await root('POST', '/v1/auth/jwt/config', { jwt_validation_pubkeys: [await exportSPKI(pair.publicKey)] }))
        .status,
    ).toBe(204);
  });
  afterAll(() => h.close());

  it("token roles' allowed and disallowed policy globs against a long policy name", async () => {
    expect(
      (await root('POST', '/v1/auth/token/roles/globbed', { allowed_policies_glob: [cubic, exponential] })).status,
    ).toBe(204);
    const refused = await root('POST', '/v1/auth/token/create/globbed', { policies: [dashes] });
    expect(refused.status).toBe(400);
    expect(refused.body.errors.join(' ')).toContain("must be subset of the role's allowed policies");
    expect(
      (await root('POST', '/v1/auth/token/roles/denying', { disallowed_policies_glob: [cubic, exponential] })).status,
    ).toBe(204);
    const allowed = await root('POST', '/v1/auth/token/create/denying', { policies: [`a${'a'.repeat(40)}`] });
    expect(allowed.status).toBe(200);
    expect(allowed.body.auth.policies).toEqual(['a'.repeat(41), 'default']);
    const denied = await root('POST', '/v1/auth/token/create/denying', { policies: ['us-east-1-prod'] });
    expect(denied.status).toBe(400);
    expect(denied.body.errors.join(' ')).toContain('token policy "us-east-1-prod" is disallowed by this role');
  });

  it('a JWT login whose glob-bound claim the user chose', async () => {
    expect(
      (
        await root('POST', '/v1/auth/jwt/role/deploy', {
          role_type: 'jwt',
          user_claim: 'sub',
          bound_claims_type: 'glob',
          bound_claims: { env: [cubic, exponential] },
        })
      ).status,
    ).toBe(204);
    const login = async (env: string) =>
      h.call('POST', '/v1/auth/jwt/login', {
        body: {
          role: 'deploy',
          jwt: await new SignJWT({ sub: 'mallory', env })
            .setProtectedHeader({ alg: 'ES256' })
            .setIssuedAt(Math.floor(h.clock.now() / 1000))
            .setExpirationTime(Math.floor(h.clock.now() / 1000) + 300)
            .sign(privateKey),
        },
      });
    for (const env of [dashes, 'a'.repeat(5_000)]) {
      const refused = await login(env);
      expect(refused.status).toBe(400);
      expect(refused.body.errors.join(' ')).toContain('claim "env" does not match any associated bound claim values');
    }
    const accepted = await login('us-east-1-prod');
    expect(accepted.status).toBe(200);
    expect(accepted.body.auth.client_token).toMatch(/^hvs\./);
  });
});

describe('each site that matched globs answers at once (scheduler)', () => {
  let h: SchedulerService;
  let client: string;

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    const management = await h.bootstrap();
    const rules = `namespace "${cubic}" { policy = "read" }\nnamespace "${exponential}" { policy = "read" }`;
    expect((await h.call('POST', '/v1/acl/policy/globs', { token: management, body: { Rules: rules } })).status).toBe(
      200,
    );
    const token = await h.call('POST', '/v1/acl/token', {
      token: management,
      body: { Type: 'client', Policies: ['globs'] },
    });
    client = token.body.SecretID;
  });
  afterAll(() => h.close());

  it('a client token opening a job stream for a long namespace', async () => {
    for (const namespace of [dashes, 'a'.repeat(5_000)]) {
      const refused = await h.stream(`/v1/event/stream?topic=Job&namespace=${namespace}`, client);
      expect(refused.status).toBe(403);
      expect(refused.text).toBe('Permission denied');
    }
    const reader = await h.open('/v1/event/stream?topic=Job&namespace=us-east-1-prod', client);
    expect(await reader.next()).toEqual({});
    await reader.close();
  });

  it('a Bearer header of spaces ending in a line separator, through the Lambda adapter', async () => {
    const lambda = lambdaHandler(schedulerFront({ core: async () => h.core }), []);
    const event = gatewayEvent('GET', '/v1/acl/token/self', { authorization: `Bearer${' '.repeat(60_000)}\u2028` });
    const answer = await lambda(event);
    // What is left after the spaces trims to nothing: an anonymous caller, who has no token to show.
    expect(answer.statusCode).toBe(404);
    expect(answer.body).toBe('ACL token not found');
  });
});

describe('the Bearer header of the secrets service', () => {
  let h: SecretsService;
  beforeAll(async () => {
    h = await startSecretsInMemory();
  });
  afterAll(() => h.close());

  it('spaces ending in a line separator, through the Lambda adapter', async () => {
    const lambda = secretsLambda(secretsFront({ core: async () => h.core }));
    const event = gatewayEvent('GET', '/v1/auth/token/lookup-self', {
      authorization: `Bearer${' '.repeat(60_000)}\u2028`,
    });
    const answer = await lambda(event);
    expect(answer.statusCode).toBe(403);
    expect(JSON.parse(String(answer.body))).toEqual({ errors: ['permission denied'] });
  });
});
