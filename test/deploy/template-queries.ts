import type { Template } from 'aws-cdk-lib/assertions';

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation JSON is untyped
type Resource = { Type: string; Properties?: any; DeletionPolicy?: string };

export const resourcesOf = (template: Template, type: string): Array<[string, Resource]> =>
  Object.entries(template.toJSON().Resources as Record<string, Resource>).filter(
    ([, resource]) => resource.Type === type,
  );

/** The app's own functions (SST and CDK add helpers of their own, such as log retention). */
export const appFunctions = (template: Template) =>
  resourcesOf(template, 'AWS::Lambda::Function').filter(([, fn]) =>
    String(fn.Properties.Handler).startsWith('functions/'),
  );

/**
 * A function's entry: its handler, and for an engine's job or a secrets family's function (one entry each for every
 * engine or family: functions/jobs/engine-job.ts, functions/secrets/family.ts) the one its `KEYHAVEN_ENGINE` or
 * `KEYHAVEN_FAMILY` names, as `functions/jobs/engine-job.handler ldap`, `functions/secrets/family.handler system`.
 */
export function entryOf(fn: Resource): string {
  const variables = fn.Properties?.Environment?.Variables;
  const which = variables?.KEYHAVEN_ENGINE ?? variables?.KEYHAVEN_FAMILY;
  return which ? `${fn.Properties.Handler} ${which}` : String(fn.Properties?.Handler);
}

/** The entry (`entryOf`) of every engine's job. */
export const engineJobEntry = (engine: string) => `functions/jobs/engine-job.handler ${engine}`;

/** The entry (`entryOf`) of every secrets family's function (functions/secrets/family.ts, `KEYHAVEN_FAMILY`). */
export const secretsEntry = (family: string) => `functions/secrets/family.handler ${family}`;

/** Route key -> entry (`entryOf`) of the Lambda the route's integration invokes. */
export function routeTargets(template: Template): Record<string, string> {
  const functions = Object.fromEntries(resourcesOf(template, 'AWS::Lambda::Function'));
  const integrations = Object.fromEntries(resourcesOf(template, 'AWS::ApiGatewayV2::Integration'));
  const targets: Record<string, string> = {};
  for (const [, route] of resourcesOf(template, 'AWS::ApiGatewayV2::Route')) {
    const integrationId = route.Properties.Target['Fn::Join'][1][1].Ref as string;
    const functionId = integrations[integrationId]?.Properties.IntegrationUri['Fn::GetAtt'][0] as string;
    const fn = functions[functionId];
    targets[route.Properties.RouteKey] = fn ? entryOf(fn) : (undefined as unknown as string);
  }
  return targets;
}

/** Every IAM statement in a template: inline role policies and policy resources. */
// biome-ignore lint/suspicious/noExplicitAny: CloudFormation JSON is untyped
export function policyStatements(template: Template): Array<{ where: string; statement: any }> {
  const found: Array<{ where: string; statement: unknown }> = [];
  for (const [id, policy] of [
    ...resourcesOf(template, 'AWS::IAM::Policy'),
    ...resourcesOf(template, 'AWS::IAM::ManagedPolicy'),
  ]) {
    for (const statement of policy.Properties.PolicyDocument.Statement) found.push({ where: id, statement });
  }
  for (const [id, role] of resourcesOf(template, 'AWS::IAM::Role')) {
    for (const policy of role.Properties.Policies ?? []) {
      for (const statement of policy.PolicyDocument.Statement)
        found.push({ where: `${id}/${policy.PolicyName}`, statement });
    }
  }
  return found as Array<{ where: string; statement: { Action: string | string[]; Resource: unknown; Effect: string } }>;
}

export const asList = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

/** The one resource of a type in a template (fails when there is none or more than one). */
export function single(template: Template, type: string): Resource {
  const found = resourcesOf(template, type);
  if (found.length !== 1 || !found[0]) throw new Error(`expected one ${type}, found ${found.length}`);
  return found[0][1];
}

/** The one event source mapping of the function whose handler is `handler`. */
export function mappingOf(template: Template, handler: string): Resource {
  const functions = Object.fromEntries(resourcesOf(template, 'AWS::Lambda::Function'));
  const found = resourcesOf(template, 'AWS::Lambda::EventSourceMapping').filter(
    ([, mapping]) =>
      functions[(mapping.Properties.FunctionName as { Ref: string }).Ref]?.Properties.Handler === handler,
  );
  if (found.length !== 1 || !found[0])
    throw new Error(`expected one event source mapping of ${handler}, found ${found.length}`);
  return found[0][1];
}

/** The IAM statements of the role a function runs as (its inline policies and the policies attached to it). */
// biome-ignore lint/suspicious/noExplicitAny: CloudFormation JSON is untyped
export function roleStatementsOf(template: Template, functionLogicalId: string): any[] {
  const fn = Object.fromEntries(resourcesOf(template, 'AWS::Lambda::Function'))[functionLogicalId];
  const roleId = fn?.Properties.Role?.['Fn::GetAtt']?.[0] as string | undefined;
  if (!roleId) throw new Error(`function ${functionLogicalId} has no role in this template`);
  const role = Object.fromEntries(resourcesOf(template, 'AWS::IAM::Role'))[roleId];
  const inline = (role?.Properties.Policies ?? []).flatMap(
    (policy: { PolicyDocument: { Statement: unknown[] } }) => policy.PolicyDocument.Statement,
  );
  const attached = resourcesOf(template, 'AWS::IAM::Policy')
    .filter(([, policy]) => (policy.Properties.Roles ?? []).some((ref: { Ref?: string }) => ref.Ref === roleId))
    .flatMap(([, policy]) => policy.Properties.PolicyDocument.Statement);
  return [...inline, ...attached];
}

/** The stage's sealing key (the Storage stack also holds the alarm topic's key): the key whose logical id is `SealingKey…`. */
export function sealingKeyOf(template: Template): [string, Resource] {
  const found = resourcesOf(template, 'AWS::KMS::Key').filter(([id]) => id.startsWith('SealingKey'));
  if (found.length !== 1 || !found[0]) throw new Error(`expected one sealing key, found ${found.length}`);
  return found[0];
}
