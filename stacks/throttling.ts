import type { CfnRoute, CfnStage } from 'aws-cdk-lib/aws-apigatewayv2';
import type { Api } from 'sst/constructs';
import { secretsFamilies } from '../packages/core/src/secrets/families.ts';
import type { DeclaredMount, StageConfig, Throttle } from './stage-config.ts';

/** Which of the stage's throttles a route takes: `login` and `credentials` are stricter than the stage's default. */
export type ThrottleClass = 'login' | 'credentials';

/**
 * The secrets API's routes that log in or issue credentials, each with its class. API Gateway throttles by route key,
 * so each is its own route (to the same family's function as the mount's catch-all, which it is more specific than):
 * `auth/token/create…` (new tokens), and under each declared mount the routes its backend names
 * (`deployment.throttled`: a login method's login and OIDC flow, the directory's `creds/`, `static-cred/` and
 * `library/`, the mesh engine's `creds/`, the cloud engine's token and key paths).
 */
export function throttledSecretsRoutes(mounts: DeclaredMount[]): Record<string, ThrottleClass> {
  const routes: Record<string, ThrottleClass> = {};
  const add = (path: string, throttle: ThrottleClass) => {
    routes[`ANY /v1/${path}`] = throttle;
  };
  for (const path of ['auth/token/create', 'auth/token/create/{proxy+}', 'auth/token/create-orphan'])
    add(path, 'credentials');
  const backends = Object.values(secretsFamilies).flat();
  for (const { path, type } of mounts) {
    const throttled = backends.find((backend) => backend.type === type)?.deployment?.throttled ?? {};
    for (const [sub, throttle] of Object.entries(throttled)) add(`${path}/${sub}`, throttle);
  }
  return routes;
}

/** The scheduler API's login routes (`acl/login` and the OIDC flow). */
export const throttledSchedulerRoutes: Record<string, ThrottleClass> = {
  'ANY /v1/acl/login': 'login',
  'ANY /v1/acl/oidc/auth-url': 'login',
  'ANY /v1/acl/oidc/complete-auth': 'login',
};

const settings = (throttle: Throttle) => ({ throttlingRateLimit: throttle.rate, throttlingBurstLimit: throttle.burst });

/**
 * Throttles an HTTP API's `$default` stage: every route at the stage's `throttle.default`, and each listed route at
 * its class's limits. Beyond them API Gateway answers 429 without invoking a function, so a flood of logins cannot
 * take the account's Lambda concurrency from the rest (and the reserved jobs keep theirs anyway). The stage waits for
 * the routes it names (CloudFormation refuses route settings for a route that does not exist yet).
 */
export function throttleApi(api: Api, throttle: StageConfig['throttle'], routes: Record<string, ThrottleClass>): void {
  const stage = api.cdk.httpApi.defaultStage?.node.defaultChild as CfnStage | undefined;
  if (!stage) throw new Error(`${api.node.id} has no default stage to throttle`);
  stage.defaultRouteSettings = settings(throttle.default);
  // `RouteSettings` is untyped JSON to CDK, so it is written as CloudFormation spells it (CDK does not convert the case).
  stage.routeSettings = Object.fromEntries(
    Object.entries(routes).map(([routeKey, throttleClass]) => [
      routeKey,
      { ThrottlingRateLimit: throttle[throttleClass].rate, ThrottlingBurstLimit: throttle[throttleClass].burst },
    ]),
  );
  const routeResources = api.node
    .findAll()
    .filter(
      (child) =>
        (child as CfnRoute).cfnResourceType === 'AWS::ApiGatewayV2::Route' && (child as CfnRoute).routeKey in routes,
    );
  for (const route of routeResources) stage.node.addDependency(route);
}
