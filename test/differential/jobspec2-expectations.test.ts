// biome-ignore-all lint/suspicious/noTemplateCurlyInString: HCL's and Nomad's ${…} interpolation is what these tests are about
import { describe, expect, it } from 'vitest';
import { parseJobHcl } from '../../packages/core/src/scheduler/cluster/job-parse/parse-job.ts';
import { unknownVariablesHcl } from '../support/jobspec2-cases.ts';

/**
 * The HCL2 job parser held to Nomad's own: each case is a test of Nomad's `jobspec2/parse_test.go` (and its
 * `jobspec2/test-fixtures/*.hcl`, hashicorp/nomad at aa026cc9, MPL-2.0), with its input and the `api.Job` (or the
 * error text) that test states the real parser answers. They are derived by hand from that file, not produced by
 * running Go: Nomad's jobspec2 needs Go 1.26 and its modules, and this machine has Debian's Go 1.19 and no module
 * download. Go's `must.Eq` compares structs whose unset fields are nil or zero, so answers are compared here with
 * their null, empty-string, zero and false fields left out (`set`).
 *
 * No case is refused here any more: functions, `for` expressions and `dynamic` blocks are evaluated as jobspec2
 * evaluates them, and `file()` answers "filesystem function disabled" as Nomad's route (`AllowFS: false`) does. One known difference is not
 * asserted: an unknown variable kept as written keeps its inner whitespace in Nomad
 * (`${   root.  field[  "FOO"].5  }`); the parser answers it trimmed at its ends (`${root.  field[  "FOO"].5}`).
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A value with the fields Go leaves unset removed (nil pointers, empty strings, zeros, false). */
function set(value: unknown): Json {
  if (Array.isArray(value)) return value.map(set);
  if (value !== null && typeof value === 'object') {
    const out: { [key: string]: Json } = {};
    for (const [key, item] of Object.entries(value))
      if (item !== null && item !== '' && item !== 0 && item !== false) out[key] = set(item);
    return out;
  }
  return value as Json;
}

const parse = (JobHCL: string, Variables?: string) =>
  parseJobHcl({ JobHCL, ...(Variables === undefined ? {} : { Variables }) });
const refusal = async (JobHCL: string, Variables?: string): Promise<string> => {
  try {
    await parse(JobHCL, Variables);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('parsed, but Nomad refuses it');
};

const variablesHcl = `
variables {
  region_var = "default_region"
}

variable "dc_var" {
  default = "default_dc"
}

job "example" {
  datacenters = [var.dc_var]
  region      = var.region_var
}
`;

describe('jobspec2 parse_test.go expectations', () => {
  it('TestParse_VariablesDefaultsAndSet: defaults, and values from a variables file', async () => {
    expect(await parse(variablesHcl)).toMatchObject({ Datacenters: ['default_dc'], Region: 'default_region' });
    expect(await parse(variablesHcl, 'dc_var = "set_dc"\n\tregion_var = "set_region"')).toMatchObject({
      Datacenters: ['set_dc'],
      Region: 'set_region',
    });
  });

  it('TestParse_UnknownVariables: known variables interpolated, unknown ones kept', async () => {
    const job = await parse(unknownVariablesHcl, 'region_var = "aug"');
    expect(job.Meta).toEqual({ known_var: 'aug', unknown_var: '${UNKNOWN}' });
    expect(job.Datacenters).toEqual(['DC1', 'DC2']);
  });

  it('TestParse_UnsetVariables: a variable with neither type nor value is "Unset variable"', async () => {
    const hcl = `
variable "region_var" {}
job "example" {
  datacenters = [for s in ["dc1", "dc2"] : upper(s)]
  region      = var.region_var
}
`;
    expect(await refusal(hcl)).toContain('Unset variable');
  });

  it('TestParse_Locals: a literal local and one built from a variable, defaulted and set', async () => {
    const hcl = `
variables {
  region_var = "default_region"
}

locals {
  # literal local
  dc = "local_dc"
  # local that depends on a variable
  region = "\${var.region_var}.example"
}

job "example" {
  datacenters = [local.dc]
  region      = local.region
}
`;
    expect(await parse(hcl)).toMatchObject({ Datacenters: ['local_dc'], Region: 'default_region.example' });
    expect(await parse(hcl, 'region_var = "set_region"')).toMatchObject({ Region: 'set_region.example' });
  });

  it('TestParse_FileOperators (disabled, as the route runs it): file() is refused, "filesystem function disabled"', async () => {
    const text = await refusal('\njob "example" {\n  region      = file("parse_test.go")\n}\n');
    expect(text).toContain('Call to function "file"');
    expect(text).toContain('filesystem function disabled');
  });

  it('TestParse_InvalidHCL: an invalid body is an error', async () => {
    expect(await refusal('invalid{hcl')).toMatch(/^Failed to parse job: input\.hcl:/);
  });

  it('TestParse_InvalidScalingSyntax: each case’s error, and the valid one parses', async () => {
    const job = (group: string, cpu: string, second: string) => `
job "example" {
  group "g1" {
    scaling {
${group}
    }

    task "t1" {
      scaling ${cpu}
      scaling ${second}
    }
  }
}
`;
    const cpu = '"cpu" {\n        max = 20\n      }';
    const mem = '"mem" {\n        max = 15\n      }';
    const valid = await parse(job('      max  = 40\n      type = "horizontal"', cpu, mem));
    expect(set(valid.TaskGroups)).toEqual([
      {
        Name: 'g1',
        Scaling: { Max: 40, Type: 'horizontal' },
        Tasks: [
          {
            Name: 't1',
            ScalingPolicies: [
              { Max: 20, Type: 'vertical_cpu' },
              { Max: 15, Type: 'vertical_mem' },
            ],
          },
        ],
      },
    ]);
    expect(await refusal(job('      #max  = 40\n      type = "horizontal"', cpu, mem))).toContain(
      'argument "max" is required',
    );
    expect(await refusal(job('      max  = 40\n      type = "invalid_type"', cpu, mem))).toContain(
      'task group scaling policy had invalid type',
    );
    const horizontal = '      max  = 40\n      type = "horizontal"';
    expect(await refusal(job(horizontal, '"not_cpu" {\n        max = 20\n      }', mem))).toContain(
      'scaling policy name must be "cpu" or "mem"',
    );
    expect(await refusal(job(horizontal, cpu, '"cpu" {\n        max = 15\n      }'))).toContain(
      'Duplicate scaling "cpu" block',
    );
    expect(
      await refusal(job(horizontal, '"cpu" {\n        max  = 20\n        type = "invalid"\n      }', mem)),
    ).toContain('Invalid scaling policy type');
  });

  describe('TestParseJob_JobWithFunctionsAndLookups', () => {
    const hcl = `
variable "env" {
  description = "target environment for the job"
}

locals {
  environments = {
    prod    = { count = 20, dcs = ["prod-dc1", "prod-dc2"] },
    staging = { count = 3, dcs = ["dc1"] },
  }

  env = lookup(local.environments, var.env, { count = 0, dcs = [] })
}

job "job-webserver" {
  datacenters = local.env.dcs
  group "group-webserver" {
    count = local.env.count

    task "server" {
      driver = "docker"

      config {
        image = "hashicorp/http-echo"
        args  = ["-text", "Hello from \${var.env}"]
      }
    }
  }
}
`;
    for (const [env, datacenters, count] of [
      ['prod', ['prod-dc1', 'prod-dc2'], 20],
      ['staging', ['dc1'], 3],
      ['unknown', [], 0],
    ] as const)
      it(env, async () => {
        const job = await parse(hcl, `env = "${env}"`);
        expect(set(job)).toEqual(
          set({
            ID: 'job-webserver',
            Name: 'job-webserver',
            Datacenters: datacenters,
            TaskGroups: [
              {
                Name: 'group-webserver',
                Count: count,
                Tasks: [
                  {
                    Name: 'server',
                    Driver: 'docker',
                    Config: { image: 'hashicorp/http-echo', args: ['-text', `Hello from ${env}`] },
                  },
                ],
              },
            ],
          }),
        );
      });
  });

  describe('TestParse_TaskEnvs', () => {
    const withEnv = (snippet: string) => `
job "example" {
  group "group" {
    task "task" {
      driver = "docker"
      config {}

      ${snippet}
    }
  }
}`;
    const cases: Array<[string, string, Record<string, string> | null]> = [
      ['none', '', null],
      ['block', '\nenv {\n  key = "value"\n} ', { key: 'value' }],
      [
        'attribute',
        '\nenv = {\n  "key.dot"                = "val1"\n  key_unquoted_without_dot = "val2"\n} ',
        { 'key.dot': 'val1', key_unquoted_without_dot: 'val2' },
      ],
      [
        'attribute_colons',
        'env = {\n  "key.dot" : "val1"\n  key_unquoted_without_dot : "val2"\n} ',
        { 'key.dot': 'val1', key_unquoted_without_dot: 'val2' },
      ],
      ['attribute_empty', 'env = {}', {}],
    ];
    for (const [name, snippet, expected] of cases)
      it(name, async () => {
        const job = await parse(withEnv(snippet));
        // biome-ignore lint/suspicious/noExplicitAny: the answer is Nomad's JSON job
        expect((job as any).TaskGroups[0].Tasks[0].Env).toEqual(expected);
      });

    it('attribute_expression', async () => {
      const job = await parse(withEnv('env = {for k in ["a", "b"]: k => "val-${k}" }'));
      // biome-ignore lint/suspicious/noExplicitAny: the answer is Nomad's JSON job
      expect((job as any).TaskGroups[0].Tasks[0].Env).toEqual({ a: 'val-a', b: 'val-b' });
    });

    it('Test_TaskEnvs_Invalid: an undefined local, a block of a for expression, a list', async () => {
      expect(await refusal(withEnv('env = { key = local.undefined_local }'))).toContain(
        'does not have an attribute named "undefined_local"',
      );
      expect(await refusal(withEnv('env {\n  for k in ["a", "b"]: k => k\n}'))).toContain('Invalid block definition');
      expect(await refusal(withEnv('env = [ "a" ]'))).toContain('Unsuitable value: map of string required');
    });
  });

  it('TestParse_Meta_Alternatives: meta as blocks and as maps answer the same job', async () => {
    const hcl = ` job "example" {
  group "group" {
    task "task" {
      driver = "config"
      config {}

      meta {
        source = "task"
      }
    }

    meta {
      source = "group"

    }
  }

  meta {
    source = "job"
  }
}
`;
    const asBlock = await parse(hcl);
    const asAttr = await parse(hcl.replaceAll('meta {', 'meta = {'));
    expect(asAttr).toEqual(asBlock);
    // biome-ignore lint/suspicious/noExplicitAny: the answer is Nomad's JSON job
    const job = asBlock as any;
    expect(job.Meta).toEqual({ source: 'job' });
    expect(job.TaskGroups[0].Meta).toEqual({ source: 'group' });
    expect(job.TaskGroups[0].Tasks[0].Meta).toEqual({ source: 'task' });
  });

  it('TestParse_Constraint_Alternatives: operator/value and the compact forms answer the same constraints', async () => {
    const opVal = (level: string, hosts: string, rack: string) => `
${level}constraint {
${level}  operator = "distinct_hosts"
${level}  value    = "${hosts}"
${level}}
${level}constraint {
${level}  operator  = "distinct_property"
${level}  attribute = "\${meta.rack}"
${level}  value     = "${rack}"
${level}}`;
    const compact = (level: string, hosts: string, rack: string) => `
${level}constraint {
${level}  distinct_hosts = ${hosts}
${level}}
${level}constraint {
${level}  distinct_property = "\${meta.rack}"
${level}  value     = "${rack}"
${level}}`;
    const job = (form: typeof opVal) => `
job "example" {${form('  ', 'true', '1')}
  group "group" {${form('    ', 'false', '2')}
    task "task" {${form('      ', 'true', '3')}
      driver = "config"
      config {}
    }
  }
}
`;
    const asOpValue = await parse(job(opVal));
    expect(await parse(job(compact))).toEqual(asOpValue);
    // biome-ignore lint/suspicious/noExplicitAny: the answer is Nomad's JSON job
    const out = asOpValue as any;
    const constraint = (l: string, r: string, op: string) => ({ LTarget: l, RTarget: r, Operand: op });
    expect(out.Constraints).toEqual([
      constraint('', 'true', 'distinct_hosts'),
      constraint('${meta.rack}', '1', 'distinct_property'),
    ]);
    expect(out.TaskGroups[0].Constraints).toEqual([
      constraint('', 'false', 'distinct_hosts'),
      constraint('${meta.rack}', '2', 'distinct_property'),
    ]);
    expect(out.TaskGroups[0].Tasks[0].Constraints).toEqual([
      constraint('', 'true', 'distinct_hosts'),
      constraint('${meta.rack}', '3', 'distinct_property'),
    ]);
  });

  describe('TestParse_UndefinedVariables: values with undefined variables are kept as written', () => {
    for (const value of [
      'plain',
      'foo-${BAR}',
      'foo-${attr.network.dev-us-east1-relay-vpc.external-ip.0}',
      '${env["BLAH"]}',
      '${mixed-indexing.0[3]["FOO"].5}',
    ])
      it(value, async () => {
        expect((await parse(`job "example" {\n  region = "${value}"\n}`)).Region).toBe(value);
      });
    it('unquoted', async () => {
      expect((await parse('job "example" {\n  region = meta.mytest\n}')).Region).toBe('${meta.mytest}');
    });
  });

  it('TestParseServiceCheck: the whole job', async () => {
    const hcl = ` job "group_service_check_script" {
  group "group" {
    service {
      name = "foo-service"
      port = "http"
      check {
        name   = "check-name"
        type   = "http"
        method = "POST"
        body   = "{\\"check\\":\\"mem\\"}"
      }
    }
  }
}
`;
    expect(set(await parse(hcl))).toEqual({
      ID: 'group_service_check_script',
      Name: 'group_service_check_script',
      TaskGroups: [
        {
          Name: 'group',
          Services: [
            {
              Name: 'foo-service',
              PortLabel: 'http',
              Checks: [{ Name: 'check-name', Type: 'http', Method: 'POST', Body: '{"check":"mem"}' }],
            },
          ],
        },
      ],
    });
  });

  const fixtureJob = (task: string) => `
job "example" {
  group "group" {
    task "task" {
${task}
    }
  }
}
`;

  it('TestWaitConfig (template-wait-config.hcl): the template’s wait in ns', async () => {
    const job = await parse(
      fixtureJob('      template {\n        wait {\n          min = "5s"\n          max = "60s"\n        }\n      }'),
    );
    // biome-ignore lint/suspicious/noExplicitAny: the answer is Nomad's JSON job
    expect((job as any).TaskGroups[0].Tasks[0].Templates[0].Wait).toEqual({ Min: 5e9, Max: 60e9 });
  });

  it('TestErrMissingKey (template-err-missing-key.hcl)', async () => {
    const job = await parse(fixtureJob('      template {\n        error_on_missing_key = true\n      }'));
    // biome-ignore lint/suspicious/noExplicitAny: the answer is Nomad's JSON job
    expect((job as any).TaskGroups[0].Tasks[0].Templates[0].ErrMissingKey).toBe(true);
  });

  it('TestRestartRenderTemplates (restart-render-templates.hcl)', async () => {
    const hcl = `
job "example" {
  group "group" {
    restart {
      render_templates = true
    }
    task "foo" {
    }
    task "bar" {
      restart {
        render_templates = false
      }
    }
  }
}
`;
    // biome-ignore lint/suspicious/noExplicitAny: the answer is Nomad's JSON job
    const group = (await parse(hcl)).TaskGroups as any;
    expect(group[0].RestartPolicy.RenderTemplates).toBe(true);
    expect(group[0].Tasks[0].RestartPolicy).toBeNull();
    expect(group[0].Tasks[1].RestartPolicy.RenderTemplates).toBe(false);
  });

  it('TestIdentity (identity-compat.nomad.hcl): the default identity moved to Task.Identity', async () => {
    const hcl = `
job "identitycompat" {
  group "cache" {
    count = 1

    network {
      port "db" {
        to = 6379
      }
    }

    task "redis" {
      driver = "docker"

      config {
        image          = "redis:7"
        ports          = ["db"]
        auth_soft_fail = true
      }

      identity {
        env  = true
        file = true
      }

      identity {
        name          = "foo"
        aud           = ["bar"]
        file          = true
        ttl           = "2h"
        change_mode   = "signal"
        change_signal = "sighup"
      }

      resources {
        cpu    = 400
        memory = 256 # 256MB
      }
    }
  }
}
`;
    // biome-ignore lint/suspicious/noExplicitAny: the answer is Nomad's JSON job
    const task = ((await parse(hcl)).TaskGroups as any)[0].Tasks[0];
    expect(task.Identity).toMatchObject({ Env: true, File: true });
    expect(task.Identities).toHaveLength(1);
    expect(task.Identities[0]).toMatchObject({
      Name: 'foo',
      Audience: ['bar'],
      File: true,
      Env: false,
      ChangeMode: 'signal',
      ChangeSignal: 'sighup',
      TTL: 2 * 3600e9,
    });
  });

  it('TestParseDynamic: dynamic groups with labels, interpolation inside maps and nested blocks', async () => {
    const hcl = `
job "example" {

  dynamic "group" {
    for_each = [
      { name = "groupA", idx = 1 },
      { name = "groupB", idx = 2 },
      { name = "groupC", idx = 3 },
    ]
    labels   = [group.value.name]

    content {
      count = group.value.idx

      service {
        port = group.value.name
      }

      task "simple" {
        driver  = "raw_exec"
        config {
          command = group.value.name
        }
        meta {
          VERSION = group.value.idx
        }
        env {
          ID = format("id:%s", group.value.idx)
        }
        resources {
          cpu = group.value.idx
        }
      }
    }
  }
}
`;
    // biome-ignore lint/suspicious/noExplicitAny: the answer is Nomad's JSON job
    const out = (await parse(hcl)) as any;
    expect(out.TaskGroups).toHaveLength(3);
    expect(out.TaskGroups.map((group: { Name: string }) => group.Name)).toEqual(['groupA', 'groupB', 'groupC']);
    expect(out.TaskGroups[0].Tasks[0].Resources.CPU).toBe(1);
    expect(out.TaskGroups[0].Services[0].PortLabel).toBe('groupA');
    // interpolation inside maps
    expect(out.TaskGroups[0].Tasks[0].Config.command).toBe('groupA');
    expect(out.TaskGroups[0].Tasks[0].Meta.VERSION).toBe('1');
    expect(out.TaskGroups[0].Tasks[0].Env.ID).toBe('id:1');
    expect(out.TaskGroups[1].Tasks[0].Env.ID).toBe('id:2');
    expect(out.TaskGroups[2].Tasks[0].Meta.VERSION).toBe('3');
    expect(out.TaskGroups[2].Count).toBe(3);
  });
});
