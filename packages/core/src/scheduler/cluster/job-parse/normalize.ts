/**
 * What Nomad's `jobspec2` does to a decoded job before answering it (`parse_job.go` `normalizeJob`): the job's label
 * as its ID and Name, `cron` as the periodic spec type, tasks written directly in the job block each in a group of
 * its own, a network's static ports moved to `ReservedPorts`, the defaults of templates (`restart`, `0644`, a 5 s
 * splay), change scripts and Vault blocks, the job's Vault and secrets given to its tasks, and the default workload
 * identity moved to `Task.Identity`.
 */
import { apiStructs } from './api-schema.ts';
import type { DecodedStruct } from './decode.ts';

const second = 1e9;

/** An api struct with every field unset, as Go's JSON encoder writes it. */
export function emptyStruct(structName: string): DecodedStruct {
  const out: DecodedStruct = {};
  for (const field of apiStructs[structName] ?? []) if (!field.omitEmpty) out[field.json] = field.zero;
  return out;
}

function normalizePorts(networks: DecodedStruct[] | null): void {
  for (const network of networks ?? []) {
    const ports = (network.DynamicPorts as DecodedStruct[] | null) ?? [];
    if (ports.length === 0) continue;
    const dynamic = ports.filter((port) => !((port.Value as number) > 0));
    const reserved = ports.filter((port) => (port.Value as number) > 0);
    network.DynamicPorts = dynamic.length > 0 ? dynamic : null;
    network.ReservedPorts = reserved.length > 0 ? reserved : null;
  }
}

function normalizeTemplates(templates: DecodedStruct[] | null): void {
  for (const template of templates ?? []) {
    template.ChangeMode ??= 'restart';
    template.Perms ??= '0644';
    template.Splay ??= 5 * second;
    template.ErrMissingKey ??= false;
    const script = template.ChangeScript as DecodedStruct | null;
    if (script) {
      script.Args ??= [];
      script.Timeout ??= 5 * second;
      script.FailOnError ??= false;
      script.RunOnFirstRender ??= false;
    }
  }
}

function normalizeVault(vault: DecodedStruct | null): void {
  if (!vault) return;
  vault.Env ??= true;
  vault.DisableFile ??= false;
  vault.ChangeMode ??= 'restart';
}

/** The job as `jobspec2` answers it, from the decoded `job "<label>"` block and the job-level extras. */
export function normalizeJob(
  job: DecodedStruct,
  label: string,
  extras: { vault: DecodedStruct | null; secrets: DecodedStruct[]; tasks: DecodedStruct[] },
): DecodedStruct {
  job.Name ??= label;
  job.ID ??= label;
  const periodic = job.Periodic as DecodedStruct | null;
  if (periodic && (periodic.Spec !== null || periodic.Specs !== null)) periodic.SpecType = 'cron';
  normalizeVault(extras.vault);
  if (extras.tasks.length > 0) {
    const alone = extras.tasks.map((task) => ({ ...emptyStruct('TaskGroup'), Name: task.Name, Tasks: [task] }));
    job.TaskGroups = [...alone, ...((job.TaskGroups as DecodedStruct[] | null) ?? [])];
  }
  for (const group of (job.TaskGroups as DecodedStruct[] | null) ?? []) {
    normalizePorts(group.Networks as DecodedStruct[] | null);
    for (const task of (group.Tasks as DecodedStruct[] | null) ?? []) {
      const resources = task.Resources as DecodedStruct | null;
      if (resources) normalizePorts(resources.Networks as DecodedStruct[] | null);
      normalizeTemplates(task.Templates as DecodedStruct[] | null);
      normalizeVault(task.Vault as DecodedStruct | null);
      if (task.Vault === null && extras.vault) task.Vault = structuredClone(extras.vault);
      const own = (task.Secrets as DecodedStruct[] | null) ?? [];
      if (own.length === 0) task.Secrets = extras.secrets.length > 0 ? structuredClone(extras.secrets) : task.Secrets;
      else task.Secrets = [...own, ...structuredClone(extras.secrets)];
      // Pre-1.7 agents read the default identity from Task.Identity.
      const identities = (task.Identities as DecodedStruct[] | null) ?? [];
      const index = identities.findIndex((identity) => identity.Name === '' || identity.Name === 'default');
      if (index >= 0) {
        task.Identity = identities[index];
        task.Identities = identities.filter((_, at) => at !== index);
      }
    }
  }
  return job;
}
