import type { StageConfig } from './stage-schema.ts';

/*
 * The checks the stacks make of a stage's settings when they synthesise it, each throwing with what is missing or
 * malformed: a replica region (Storage.ts), alarm subscriptions (alarms.ts), the edge's names, certificates and web
 * ACL (Edge.ts). The mounts are checked where the stage is read (`stageConfig`).
 */

/** A deploy outside the authoritative region needs a replica there and where to forward; throws naming what is missing. */
export function checkReplicaRegion(stage: string, config: StageConfig): void {
  const missing = (['authoritativeUrl', 'authoritativeSecretsUrl', 'authoritativeSealingKeyArn'] as const).filter(
    (field) => !config[field],
  );
  if (missing.length > 0) {
    throw new Error(
      `stage config: ${stage} in ${config.region} is not the authoritative region (${config.authoritativeRegion}); set ${missing.join(', ')}`,
    );
  }
  if (!config.replicaRegions.includes(config.region)) {
    throw new Error(
      `stage config: ${stage} has no replica in ${config.region}; add it to replicaRegions and deploy ${config.authoritativeRegion} first`,
    );
  }
}

/**
 * A stage outside dev must say where its alarms go, and each subscription must be well formed; throws naming what is
 * wrong. Dev stages may have none (their alarms then only change state on the topic nobody reads).
 */
export function checkAlarmSubscriptions(
  stage: string,
  config: Pick<StageConfig, 'alarmSubscriptions' | 'isDev'>,
): void {
  if (!config.isDev && config.alarmSubscriptions.length === 0) {
    throw new Error(
      `stage config: ${stage} is not a dev stage, so its alarms must reach a person: set alarmSubscriptions (email, https or sms) in stacks/stage-config.ts`,
    );
  }
  const forms = { email: /^[^@\s]+@[^@\s]+\.[^@\s]+$/, https: /^https:\/\/[^/\s]+/, sms: /^\+[1-9]\d{6,14}$/ } as const;
  for (const { protocol, endpoint } of config.alarmSubscriptions) {
    const form = forms[protocol];
    if (!form)
      throw new Error(
        `stage config: alarm subscription protocol "${protocol}" is not one of ${Object.keys(forms).join(', ')}`,
      );
    if (!form.test(endpoint))
      throw new Error(`stage config: alarm subscription "${endpoint}" is not a valid ${protocol} endpoint`);
  }
}

const certificateInUsEast1 = /^arn:aws[a-z-]*:acm:us-east-1:\d{12}:certificate\/[\w-]+$/;
const cloudFrontWebAcl = /^arn:aws[a-z-]*:wafv2:us-east-1:\d{12}:global\/webacl\/[\w-]+\/[\w-]+$/;
const hostName = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/**
 * The edge of a stage: outside dev stages both distributions have their own name and certificate (the default
 * `*.cloudfront.net` certificate accepts TLS 1.0, which only a distribution with its own certificate can refuse), and a
 * stage deployed outside us-east-1 names the web ACL of its distributions (`edgeWebAclArn`: CloudFront takes only web
 * ACLs made in us-east-1). Throws naming what is missing or malformed.
 */
export function checkEdge(
  stage: string,
  config: Pick<StageConfig, 'isDev' | 'region' | 'customDomains' | 'edgeWebAclArn'>,
): void {
  for (const service of ['secrets', 'scheduler'] as const) {
    const domain = config.customDomains?.[service];
    if (!domain) {
      if (config.isDev) continue;
      throw new Error(
        `stage config: ${stage} is not a dev stage, so its ${service} distribution needs its own name and certificate (CloudFront's default *.cloudfront.net certificate accepts TLS 1.0): set customDomains.${service} { domainName, certificateArn } (an ACM certificate in us-east-1)`,
      );
    }
    if (!hostName.test(domain.domainName))
      throw new Error(`stage config: customDomains.${service}.domainName "${domain.domainName}" is not a host name`);
    if (!certificateInUsEast1.test(domain.certificateArn)) {
      throw new Error(
        `stage config: customDomains.${service}.certificateArn "${domain.certificateArn}" is not an ACM certificate ARN in us-east-1 (CloudFront takes no other)`,
      );
    }
  }
  if (
    config.customDomains?.secrets &&
    config.customDomains.secrets.domainName === config.customDomains.scheduler?.domainName
  ) {
    throw new Error('stage config: customDomains.secrets and customDomains.scheduler must be different names');
  }
  if (config.edgeWebAclArn !== undefined && !cloudFrontWebAcl.test(config.edgeWebAclArn)) {
    throw new Error(
      `stage config: edgeWebAclArn "${config.edgeWebAclArn}" is not a CloudFront web ACL ARN (arn:aws:wafv2:us-east-1:<account>:global/webacl/<name>/<id>)`,
    );
  }
  if (!config.isDev && config.region !== 'us-east-1' && !config.edgeWebAclArn) {
    throw new Error(
      `stage config: ${stage} is not a dev stage and is deployed in ${config.region}, where no CloudFront web ACL can be made: set edgeWebAclArn to a web ACL in us-east-1 (a us-east-1 deploy's output EdgeWebAclArn)`,
    );
  }
}
