// biome-ignore-all lint/suspicious/noTemplateCurlyInString: HCL's and Nomad's ${…} interpolation is what these tests are about
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unknownVariablesHcl } from '../support/jobspec2-cases.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

/**
 * `PUT|POST /v1/jobs/parse` (Nomad's `JobsParseRequest`): a job file in HCL2, parsed by HashiCorp's HCL parser
 * (`@cdktf/hcl2json`, the Go parser compiled to WebAssembly), decoded into Nomad's `api.Job` JSON as `jobspec2` does,
 * then registered as it was answered. The in-memory store: parsing writes nothing, which the index shows.
 */

const second = 1e9;

const webHcl = `
variable "image" {
  default = "python:3"
}

job "web" {
  datacenters = ["dc1"]
  meta {
    team = "infra"
  }
  update {
    max_parallel     = 2
    healthy_deadline = "5m"
    min_healthy_time = "15s"
  }
  constraint {
    attribute = "\${attr.kernel.name}"
    value     = "linux"
  }
  group "web" {
    count = 3
    network {
      port "http" {}
      port "admin" {
        static = 9090
      }
    }
    service {
      name     = "web"
      port     = "http"
      provider = "nomad"
      check {
        type     = "http"
        path     = "/"
        interval = "10s"
        timeout  = "2s"
      }
    }
    restart {
      attempts = 3
      delay    = "20s"
      mode     = "delay"
    }
    ephemeral_disk {
      size = 500
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = "python3"
        args    = ["-m", "http.server", "\${NOMAD_PORT_http}"]
        image   = var.image
      }
      env {
        GREETING = "hello \${var.image}"
        WORKERS  = 4
      }
      resources {
        cpu    = 100
        memory = 64
      }
      template {
        data        = "{{ env \\"NOMAD_ALLOC_ID\\" }}"
        destination = "local/id"
      }
      kill_timeout = "20s"
    }
  }
}
`;

describe('POST /v1/jobs/parse: HCL2 job files to Nomad’s JSON job', () => {
  let h: SchedulerService;
  let root: string;
  const parse = (body: unknown, token = root, query = '') => h.call('POST', `/v1/jobs/parse${query}`, { token, body });

  async function tokenWith(rules: string): Promise<string> {
    const name = `p-${Math.random().toString(36).slice(2, 10)}`;
    expect((await h.call('POST', `/v1/acl/policy/${name}`, { token: root, body: { Rules: rules } })).status).toBe(200);
    const out = await h.call('POST', '/v1/acl/token', { token: root, body: { Type: 'client', Policies: [name] } });
    return out.body.SecretID as string;
  }

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
  });
  afterAll(() => h.close());

  it('answers the job as jobspec2 decodes it: labels, CamelCase fields, durations in ns, arrays, kept templates', async () => {
    const before = await h.scheduler.state.currentIndex();
    const out = await parse({ JobHCL: webHcl });
    expect(out.status, out.text).toBe(200);
    const job = out.body;
    expect(job).toMatchObject({
      ID: 'web',
      Name: 'web',
      Region: null,
      Namespace: null,
      Type: null,
      Datacenters: ['dc1'],
      Meta: { team: 'infra' },
      Update: {
        MaxParallel: 2,
        HealthyDeadline: 5 * 60 * second,
        MinHealthyTime: 15 * second,
        Stagger: null,
        Canary: null,
      },
      Constraints: [{ LTarget: '${attr.kernel.name}', RTarget: 'linux', Operand: '=' }],
    });
    const [group] = job.TaskGroups;
    expect(group).toMatchObject({
      Name: 'web',
      Count: 3,
      RestartPolicy: { Attempts: 3, Delay: 20 * second, Mode: 'delay', Interval: null, RenderTemplates: null },
      EphemeralDisk: { SizeMB: 500, Sticky: null, Migrate: null },
    });
    expect(group.Networks).toHaveLength(1);
    expect(group.Networks[0].DynamicPorts).toEqual([
      { Label: 'http', Value: 0, To: 0, HostNetwork: '', IgnoreCollision: false },
    ]);
    expect(group.Networks[0].ReservedPorts).toEqual([
      { Label: 'admin', Value: 9090, To: 0, HostNetwork: '', IgnoreCollision: false },
    ]);
    expect(group.Services[0]).toMatchObject({ Name: 'web', PortLabel: 'http', Provider: 'nomad' });
    expect(group.Services[0].Checks).toEqual([
      expect.objectContaining({ Type: 'http', Path: '/', Interval: 10 * second, Timeout: 2 * second }),
    ]);
    const [task] = group.Tasks;
    expect(task).toMatchObject({
      Name: 'server',
      Driver: 'raw_exec',
      Config: { command: 'python3', args: ['-m', 'http.server', '${NOMAD_PORT_http}'], image: 'python:3' },
      Env: { GREETING: 'hello python:3', WORKERS: '4' },
      Resources: { CPU: 100, MemoryMB: 64, DiskMB: null },
      KillTimeout: 20 * second,
      Leader: false,
      ShutdownDelay: 0,
    });
    expect(task.Templates).toEqual([
      expect.objectContaining({
        EmbeddedTmpl: '{{ env "NOMAD_ALLOC_ID" }}',
        DestPath: 'local/id',
        ChangeMode: 'restart',
        Perms: '0644',
        Splay: 5 * second,
        ErrMissingKey: false,
      }),
    ]);
    // Every field of Nomad's api.Task is in the answer, unset ones as Go writes them.
    expect(Object.keys(task)).toEqual(expect.arrayContaining(['Vault', 'Artifacts', 'Lifecycle', 'Identity']));
    expect(task.Vault).toBeNull();
    expect(await h.scheduler.state.currentIndex()).toBe(before);
  });

  it('with Canonicalize, answers the defaults a registration applies; the answer registers as it is', async () => {
    const out = await parse({ JobHCL: webHcl, Canonicalize: true });
    expect(out.status, out.text).toBe(200);
    expect(out.body).toMatchObject({
      ID: 'web',
      Namespace: 'default',
      Region: 'global',
      Type: 'service',
      Priority: 50,
      Update: { MaxParallel: 2, Stagger: 30 * second, HealthCheck: 'checks' },
    });
    expect(out.body.TaskGroups[0].ReschedulePolicy).toMatchObject({ Unlimited: true, DelayFunction: 'exponential' });
    const registered = await h.call('PUT', '/v1/jobs', { token: root, body: { Job: out.body } });
    expect(registered.status, registered.text).toBe(200);
    const stored = await h.scheduler.jobs.get('default', 'web');
    expect(stored?.TaskGroups[0]?.Count).toBe(3);
    expect(stored?.TaskGroups[0]?.Tasks[0]?.Env).toEqual({ GREETING: 'hello python:3', WORKERS: '4' });
  });

  it('takes variables as the content of a variables file, typed by their declarations', async () => {
    const hcl = `
variable "dc" {
  default = "dc1"
}
variable "replicas" {
  type = number
}
variables {
  region_var = "default_region"
}
locals {
  full = "\${var.dc}-\${local.suffix}"
  suffix = "x"
}
job "vars" {
  datacenters = [var.dc, local.full]
  region      = var.region_var
  group "g" {
    count = var.replicas
  }
}`;
    const out = await parse({ JobHCL: hcl, Variables: 'replicas = "4"\nregion_var = "eu"\n' });
    expect(out.status, out.text).toBe(200);
    expect(out.body).toMatchObject({ Datacenters: ['dc1', 'dc1-x'], Region: 'eu' });
    expect(out.body.TaskGroups[0].Count).toBe(4);
  });

  it('checks variable validation blocks against the value the variable ends with, as jobspec2 does', async () => {
    // Nomad's jobspec2/parse_test.go TestParse_VariableValidationErrorMessage, then conditions that pass and fail.
    const hcl = `
variable "build_id" {
  type    = string
  default = "12345"
  validation {
    condition     = var.build_id != ""
    error_message = "ビルド番号を確認してください"
  }
}
variable "replicas" {
  type    = number
  default = 2
  validation {
    condition     = var.replicas >= 1 && var.replicas <= 5
    error_message = "replicas is between 1 and 5"
  }
  validation {
    condition     = floor(var.replicas) == var.replicas && length([for n in [var.replicas] : n]) == 1
    error_message = "replicas is a whole number"
  }
}
job "valid" {
  meta {
    build = var.build_id
  }
  group "g" {
    count = var.replicas
  }
}`;
    const before = await h.scheduler.state.currentIndex();
    const passing = await parse({ JobHCL: hcl });
    expect(passing.status, passing.text).toBe(200);
    expect(passing.body.Meta).toEqual({ build: '12345' });
    expect(passing.body.TaskGroups[0].Count).toBe(2);
    // A value from the request's variables file is checked too: a passing one is used, a failing one names the rule.
    const given = await parse({ JobHCL: hcl, Variables: 'replicas = "5"\n' });
    expect(given.status, given.text).toBe(200);
    expect(given.body.TaskGroups[0].Count).toBe(5);
    const tooMany = await parse({ JobHCL: hcl, Variables: 'replicas = 9\n' });
    expect(tooMany.status).toBe(400);
    expect(tooMany.text).toMatch(
      /^Failed to parse job: variable "replicas": Invalid value for varfile variable; replicas is between 1 and 5 \(checked by validation block 1 of variable "replicas"\)/,
    );
    const fraction = await parse({ JobHCL: hcl, Variables: 'replicas = 1.5\n' });
    expect(fraction.text).toMatch(
      /Invalid value for varfile variable; replicas is a whole number \(checked by validation block 2/,
    );
    const failingDefault = await parse({ JobHCL: hcl.replace('default = "12345"', 'default = ""') });
    expect(failingDefault.status).toBe(400);
    expect(failingDefault.text).toMatch(
      /variable "build_id": Invalid value for default variable; ビルド番号を確認してください/,
    );
    expect(await h.scheduler.state.currentIndex()).toBe(before);
  });

  describe('a validation block Nomad refuses is a 400 naming what is wrong', () => {
    const withValidation = (body: string, type = 'string', value = '"a"') =>
      `variable "v" {\n  type = ${type}\n  default = ${value}\n  validation {\n${body}\n  }\n}\njob "x" {\n}`;
    const cases: Array<[string, string, RegExp]> = [
      [
        'an empty message',
        withValidation('condition = var.v != ""\nerror_message = ""'),
        /Invalid validation error message; An empty or blank string/,
      ],
      [
        'a blank message',
        withValidation('condition = var.v != ""\nerror_message = "   "'),
        /Invalid validation error message/,
      ],
      [
        'no condition',
        withValidation('error_message = "m"'),
        /Missing required argument; The argument "condition" is required/,
      ],
      [
        'no message',
        withValidation('condition = var.v != ""'),
        /Missing required argument; The argument "error_message" is required/,
      ],
      [
        'an unknown argument',
        withValidation('condition = var.v != ""\nerror_message = "m"\nseverity = "warn"'),
        /Unsupported argument; An argument named "severity"/,
      ],
      [
        'a condition that does not refer to the variable',
        withValidation('condition = true\nerror_message = "m"'),
        /Invalid variable validation condition; The condition for variable "v" must refer to var.v/,
      ],
      [
        'a condition that refers to another variable',
        `variable "w" {\n  default = "b"\n}\n${withValidation('condition = var.v != var.w\nerror_message = "m"')}`,
        /Invalid reference in variable validation; The condition for variable "v" can only refer to the variable itself, using var.v/,
      ],
      [
        'a condition that refers to a local',
        `locals {\n  l = "b"\n}\n${withValidation('condition = var.v != local.l\nerror_message = "m"')}`,
        /Invalid reference in variable validation/,
      ],
      [
        'a condition that answers null',
        withValidation('condition = var.v == "a" ? null : true\nerror_message = "m"'),
        /Invalid variable validation result; Validation condition expression must return either true or false, not null/,
      ],
      [
        'a condition that answers a string',
        withValidation('condition = "yes${var.v}"\nerror_message = "m"'),
        /Invalid variable validation result; Invalid validation condition result value/,
      ],
      [
        'a condition that fails to evaluate',
        withValidation('condition = var.v + 1 > 0\nerror_message = "m"'),
        /variable "v": /,
      ],
    ];
    for (const [name, JobHCL, message] of cases)
      it(name, async () => {
        const before = await h.scheduler.state.currentIndex();
        const out = await parse({ JobHCL });
        expect(out.status, out.text).toBe(400);
        expect(out.text).toMatch(message);
        expect(await h.scheduler.state.currentIndex()).toBe(before);
      });
  });

  it('decodes and encodes YAML as go-cty-yaml does (yamldecode, yamlencode)', async () => {
    const hcl = `
locals {
  config = yamldecode(<<EOT
name: web
replicas: 0x3
enabled: yes
tags: [a, b]
defaults: &d
  region: eu
override:
  <<: *d
  zone: b
EOT
  )
}
job "yaml" {
  region = local.config.override.region
  meta {
    name    = local.config.name
    enabled = local.config.enabled
    tags    = yamlencode(local.config.tags)
    doc     = yamlencode({ b = "two\\nlines", a = 1 })
  }
  group "g" {
    count = local.config.replicas
  }
}`;
    const before = await h.scheduler.state.currentIndex();
    const out = await parse({ JobHCL: hcl });
    expect(out.status, out.text).toBe(200);
    expect(out.body.Region).toBe('eu');
    expect(out.body.TaskGroups[0].Count).toBe(3);
    expect(out.body.Meta).toEqual({
      name: 'web',
      enabled: 'true',
      tags: '- "a"\n- "b"\n',
      doc: '"a": 1\n"b": |-\n  two\n  lines\n',
    });
    for (const [source, problem] of [
      ['a: 1\\n---\\nb: 2', /yamldecode.*only a single document is allowed/],
      ['a: [1', /Call to function "yamldecode" failed/],
      ['x: !custom 1', /unsupported tag "!custom"/],
      ['x: *missing', /reference to undefined anchor "missing"/],
    ] as const) {
      const refused = await parse({ JobHCL: `job "x" {\n  region = yamldecode("${source}").x\n}` });
      expect(refused.status, source).toBe(400);
      expect(refused.text).toMatch(problem);
    }
    expect(await h.scheduler.state.currentIndex()).toBe(before);
  });

  it('evaluates HCL2 expressions as jobspec2 does: functions, operators, conditionals, for, splats, heredocs', async () => {
    // Nomad's jobspec2/parse_test.go TestParse_UnknownVariables, then more of the expression language.
    const nomad = await parse({ JobHCL: unknownVariablesHcl, Variables: 'region_var = "aug"' });
    expect(nomad.status, nomad.text).toBe(200);
    expect(nomad.body.Meta).toEqual({ known_var: 'aug', unknown_var: '${UNKNOWN}' });
    expect(nomad.body.Datacenters).toEqual(['DC1', 'DC2']);
    expect(nomad.body.Region).toBe('aug');

    const hcl = `
variable "env" {
  default = "prod"
}
variable "ports" {
  default = [8080, 9090]
}
variable "servers" {
  default = [{ name = "a", weight = 2 }, { name = "b", weight = 3 }]
}
locals {
  replicas = var.env == "prod" ? max(var.ports...) / 3030 : 1
  names    = join(",", var.servers[*].name)
  labels   = merge({ team = "core" }, { env = var.env })
}
job "expr" {
  datacenters = [for i in range(2) : format("dc-%02d", i + 1)]
  region      = lower(trimspace("  EU-West  "))
  priority    = 40 + length(var.servers) * 5
  all_at_once = !(var.env != "prod")
  meta = merge(local.labels, {
    names    = local.names
    total    = tostring_free = sum_of = 0
  })
}`.replace(
      '    total    = tostring_free = sum_of = 0\n',
      '    weights  = jsonencode({ for s in var.servers : s.name => s.weight })\n    kernel   = "${attr.kernel.name}-${upper(var.env)}"\n    note     = <<-EOT\n      %{ for p in var.ports ~}\n      port ${p}\n      %{ endfor ~}\n      %{ if var.env == "prod" }strict%{ else }lax%{ endif }\n    EOT\n',
    );
    const out = await parse({ JobHCL: hcl });
    expect(out.status, out.text).toBe(200);
    expect(out.body).toMatchObject({
      ID: 'expr',
      Datacenters: ['dc-01', 'dc-02'],
      Region: 'eu-west',
      Priority: 50,
      AllAtOnce: true,
    });
    expect(out.body.Meta).toEqual({
      team: 'core',
      env: 'prod',
      names: 'a,b',
      weights: '{"a":2,"b":3}',
      kernel: '${attr.kernel.name}-PROD',
      note: 'port 8080\nport 9090\nstrict\n',
    });
    // A conditional's local as a count, and a value for the variable from the request.
    const grouped = await parse({
      JobHCL: `variable "env" {\n  default = "dev"\n}\njob "g" {\n  group "web" {\n    count = var.env == "prod" ? 3 : 1\n  }\n}`,
      Variables: 'env = "prod"',
    });
    expect(grouped.status, grouped.text).toBe(200);
    expect(grouped.body.TaskGroups[0].Count).toBe(3);
  });

  it('expands dynamic blocks: a map for_each, an iterator name, a nested dynamic seeing the outer iterator', async () => {
    const hcl = `
variable "groups" {
  default = {
    api = { count = 2, ports = ["http", "grpc"] }
    web = { count = 1, ports = ["http"] }
  }
}
job "dyn" {
  dynamic "group" {
    for_each = var.groups
    iterator = g
    labels   = [g.key]
    content {
      count = g.value.count
      network {
        dynamic "port" {
          for_each = g.value.ports
          labels   = [port.value]
          content {
            to = port.key + 8000
          }
        }
      }
      task "t" {
        driver = "raw_exec"
        config {
          command = "/bin/\${g.key}"
          args    = ["\${NOMAD_PORT_http}", "$\${literal}"]
        }
      }
    }
  }
}`;
    const out = await parse({ JobHCL: hcl });
    expect(out.status, out.text).toBe(200);
    // biome-ignore lint/suspicious/noExplicitAny: the answer is Nomad's JSON job
    const groups = out.body.TaskGroups as Array<Record<string, any>>;
    expect(groups.map((group) => [group.Name, group.Count])).toEqual([
      ['api', 2],
      ['web', 1],
    ]);
    expect(groups[0]?.Networks[0].DynamicPorts).toEqual([
      expect.objectContaining({ Label: 'http', To: 8000 }),
      expect.objectContaining({ Label: 'grpc', To: 8001 }),
    ]);
    expect(groups[0]?.Tasks[0].Config).toEqual({ command: '/bin/api', args: ['${NOMAD_PORT_http}', '${literal}'] });
    // A for_each that is not a collection, and a dynamic block without content, are 400s naming them.
    const notIterable = await parse({
      JobHCL: 'job "d" {\n  dynamic "group" {\n    for_each = 3\n    labels = ["x"]\n    content {}\n  }\n}',
    });
    expect(notIterable.status).toBe(400);
    expect(notIterable.text).toContain('Invalid dynamic for_each value');
    const noContent = await parse({
      JobHCL: 'job "d" {\n  dynamic "group" {\n    for_each = [1]\n    labels = ["x"]\n  }\n}',
    });
    expect(noContent.status).toBe(400);
    expect(noContent.text).toContain('Missing content block');
  });

  it('keeps the file’s order of labelled blocks (the parser answers them sorted by label)', async () => {
    const hcl = `
job "order" {
  group "web" {
    task "zeta" {
      driver = "raw_exec"
    }
    task "alpha" {
      driver = "raw_exec"
      template {
        data = "\${a} } { \\" }"
      }
    }
    network {
      port "z" {}
      port "a" {}
    }
  }
  group "db" {
    count = 2 # { not a block
    meta = { b = "}" }
  }
}`;
    const out = await parse({ JobHCL: hcl });
    expect(out.status, out.text).toBe(200);
    expect(out.body.TaskGroups.map((group: { Name: string }) => group.Name)).toEqual(['web', 'db']);
    expect(out.body.TaskGroups[0].Tasks.map((task: { Name: string }) => task.Name)).toEqual(['zeta', 'alpha']);
    expect(out.body.TaskGroups[0].Networks[0].DynamicPorts.map((port: { Label: string }) => port.Label)).toEqual([
      'z',
      'a',
    ]);
    expect(out.body.TaskGroups[0].Tasks[1].Templates[0].EmbeddedTmpl).toBe('${a} } { " }');
    expect(out.body.TaskGroups[1]).toMatchObject({ Count: 2, Meta: { b: '}' } });
  });

  it('constraint and affinity shorthands, as jobspec2’s hand-written decoders read them', async () => {
    const hcl = `
job "c" {
  constraint {
    distinct_hosts = true
  }
  constraint {
    distinct_property = "\${meta.rack}"
    value             = "2"
  }
  constraint {
    attribute = "\${attr.os.version}"
    version   = ">= 20"
  }
  affinity {
    attribute        = "\${node.class}"
    set_contains_any = "a,b"
    weight           = 50
  }
}`;
    const out = await parse({ JobHCL: hcl });
    expect(out.status, out.text).toBe(200);
    expect(out.body.Constraints).toEqual([
      { LTarget: '', RTarget: 'true', Operand: 'distinct_hosts' },
      { LTarget: '${meta.rack}', RTarget: '2', Operand: 'distinct_property' },
      { LTarget: '${attr.os.version}', RTarget: '>= 20', Operand: 'version' },
    ]);
    expect(out.body.Affinities).toEqual([
      { LTarget: '${node.class}', RTarget: 'a,b', Operand: 'set_contains_any', Weight: 50 },
    ]);
  });

  it('parameterized and periodic blocks, a task written in the job block, a job-level vault', async () => {
    const hcl = `
job "batch" {
  type = "batch"
  periodic {
    crons            = ["*/5 * * * *"]
    prohibit_overlap = true
  }
  parameterized {
    payload       = "optional"
    meta_required = ["who"]
  }
  vault {
    policies = ["p"]
  }
  task "alone" {
    driver = "raw_exec"
    config {
      command = "true"
    }
  }
}`;
    const out = await parse({ JobHCL: hcl });
    expect(out.status, out.text).toBe(200);
    expect(out.body.Periodic).toMatchObject({ Specs: ['*/5 * * * *'], SpecType: 'cron', ProhibitOverlap: true });
    expect(out.body.ParameterizedJob).toEqual({ Payload: 'optional', MetaRequired: ['who'], MetaOptional: null });
    expect(out.body.TaskGroups).toHaveLength(1);
    expect(out.body.TaskGroups[0]).toMatchObject({ Name: 'alone', Count: null });
    expect(out.body.TaskGroups[0].Tasks[0]).toMatchObject({
      Name: 'alone',
      Vault: { Policies: ['p'], Env: true, DisableFile: false, ChangeMode: 'restart' },
    });
  });

  describe('bad input: a 400 naming the problem, never a 500, nothing written', () => {
    const cases: Array<[string, unknown, RegExp]> = [
      ['an empty body', {}, /^Job spec is empty$/],
      [
        'a syntax error (the parser’s own message)',
        { JobHCL: 'job "x" {\n  a = \n' },
        /^Failed to parse job: input\.hcl:2,7-3,1: Invalid expression; Expected the start of an expression/,
      ],
      [
        'an unknown argument',
        { JobHCL: 'job "x" {\n  colour = "blue"\n}' },
        /Unsupported argument; An argument named "colour"/,
      ],
      [
        'an unknown block',
        { JobHCL: 'job "x" {\n  widget {\n  }\n}' },
        /Unsupported block type; Blocks of type "widget"/,
      ],
      [
        'a duplicate singular block',
        { JobHCL: 'job "x" {\n  update {\n  }\n  update {\n  }\n}' },
        /Duplicate update block/,
      ],
      ['no job block', { JobHCL: 'variable "a" {\n  default = 1\n}' }, /Missing job block/],
      ['two job blocks', { JobHCL: 'job "a" {\n}\njob "b" {\n}' }, /Duplicate job block/],
      ['a group without its name', { JobHCL: 'job "x" {\n  group {\n  }\n}' }, /Missing name for group/],
      [
        'an unknown function',
        { JobHCL: 'job "x" {\n  region = nosuch("a")\n}' },
        /region: Call to unknown function; Call to function "nosuch" refused/,
      ],
      [
        'file() reading the server’s disk',
        { JobHCL: 'job "x" {\n  region = file("/etc/passwd")\n}' },
        /Call to function "file"/,
      ],
      [
        'an operator on the wrong type',
        { JobHCL: 'job "x" {\n  priority = 1 + "a"\n}' },
        /priority: Incorrect value type; the right operand is a string: a number is required/,
      ],
      [
        'an undeclared variable',
        { JobHCL: 'job "x" {\n  region = var.nope\n}' },
        /Undefined variable; There is no variable named "nope"/,
      ],
      [
        'a variable without a value',
        { JobHCL: 'variable "r" {}\njob "x" {\n  region = var.r\n}' },
        /Unset variable "r"/,
      ],
      [
        'a value for an undeclared variable',
        { JobHCL: 'job "x" {\n}', Variables: 'ghost = 1' },
        /Undefined variable; A "ghost" variable/,
      ],
      [
        'a bad duration',
        { JobHCL: 'job "x" {\n  update {\n    stagger = "soon"\n  }\n}' },
        /stagger: Unsuitable value type; Unsuitable duration value/,
      ],
      [
        'a fractional count',
        { JobHCL: 'job "x" {\n  group "g" {\n    count = 1.5\n  }\n}' },
        /count: Unsuitable value type; Unsuitable value: a whole number is required/,
      ],
      [
        'a list where a string goes',
        { JobHCL: 'job "x" {\n  region = ["a"]\n}' },
        /region: Unsuitable value type; Unsuitable value: string required, got list/,
      ],
      [
        'a required argument missing',
        { JobHCL: 'job "x" {\n  group "g" {\n    task "t" {\n      lifecycle {\n      }\n    }\n  }\n}' },
        /Missing required argument; The argument "hook" is required/,
      ],
      [
        'a template directive never closed',
        { JobHCL: 'job "x" {\n  region = "%{ if true }a"\n}' },
        /Unexpected end of template; The if directive/,
      ],
      ['a JobHCL that is not a string', { JobHCL: 42 }, /JobHCL/],
      [
        'a task scaling policy that is neither cpu nor mem',
        { JobHCL: 'job "x" {\n  group "g" {\n    task "t" {\n      scaling "disk" {\n      }\n    }\n  }\n}' },
        /Invalid scaling policy name/,
      ],
    ];
    for (const [name, body, message] of cases)
      it(name, async () => {
        const before = await h.scheduler.state.currentIndex();
        const out = await parse(body);
        expect(out.status, out.text).toBe(400);
        expect(out.text).toMatch(message);
        expect(await h.scheduler.state.currentIndex()).toBe(before);
      });
  });

  it('ACL as Nomad’s: parse-job or submit-job in the request’s namespace, else 403', async () => {
    await h.call('PUT', '/v1/namespace', { token: root, body: { Name: 'team-a' } });
    const parser = await tokenWith('namespace "team-a" { capabilities = ["parse-job"] }');
    const submitter = await tokenWith('namespace "team-a" { capabilities = ["submit-job"] }');
    // Nomad's `read` policy holds parse-job; a token of read-job and list-jobs alone does not.
    const readPolicy = await tokenWith('namespace "team-a" { policy = "read" }');
    const reader = await tokenWith('namespace "team-a" { capabilities = ["read-job", "list-jobs"] }');
    const body = { JobHCL: 'job "x" {\n}' };
    expect((await parse(body, parser, '?namespace=team-a')).status).toBe(200);
    expect((await parse(body, submitter, '?namespace=team-a')).status).toBe(200);
    expect((await parse(body, readPolicy, '?namespace=team-a')).status).toBe(200);
    const denied = await parse(body, reader, '?namespace=team-a');
    expect(denied.status).toBe(403);
    expect(denied.text).toBe('Permission denied');
    expect((await parse(body, parser)).status).toBe(403);
  });
});
