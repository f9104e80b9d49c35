// biome-ignore-all lint/suspicious/noTemplateCurlyInString: HCL's and Nomad's ${…} interpolation is what these tests are about
/**
 * Attack class: the HCL job parser (`POST /v1/jobs/parse`) as a way into the server or past the ACL.
 *
 * Attackers: a token without `parse-job` or `submit-job` in the namespace (a `read-job`-only token, another
 * namespace's writer), an anonymous caller, and any caller who may parse, sending a hostile job file.
 * They try: parsing in a namespace they hold nothing in; a job file whose expressions would read the server's disk
 * or environment (`file()`, `templatefile()`, `env()`, `fileset()`, a `var.` reference that is not declared); a body
 * over the services' limit; a JobHCL over a job's size; brackets nested thousands deep (the parser recurses on each);
 * expressions built to cost the server (`range()` of millions, `format` widths, nested `for` products, operators
 * nested thousands deep, a backtracking regular expression), also as a variable's `validation` condition, and a
 * condition that reaches for another variable, a local or a run-time value; YAML whose aliases expand to billions of
 * values (billion laughs) or that nests without bound, through `yamldecode`.
 * They must never reach: the content of a file on the server, a 500, a parser stuck or crashed for the next caller,
 * anything written. Each refusal is a 403 `Permission denied` or a 400/413 naming the problem, the index unmoved.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maxHclNesting, maxJobHclBytes } from '../../packages/core/src/scheduler/cluster/job-parse/parse-job.ts';
import { attackCalls, teamsHarness } from '../support/cluster-attacks.ts';
import type { SchedulerService } from '../support/scheduler-harness.ts';

describe('attack: the HCL job parser', () => {
  let h: SchedulerService;
  let root: string;
  /** `token` '' for an anonymous call. */
  const parse = (body: unknown, token = root, query = '') =>
    h.call('POST', `/v1/jobs/parse${query}`, { ...(token ? { token } : {}), body });

  const { tokenWith, refused } = attackCalls(() => ({ h, root }));

  beforeAll(async () => {
    ({ h, root } = await teamsHarness());
  });
  afterAll(() => h.close());

  it('a token without parse-job or submit-job there, another namespace’s writer, and anonymous get 403', async () => {
    const readOnly = await tokenWith('namespace "team-a" { capabilities = ["read-job", "list-jobs"] }');
    const teamB = await tokenWith('namespace "team-b" { policy = "write" }');
    const body = { JobHCL: 'job "x" {\n}' };
    expect(await refused(parse(body, readOnly, '?namespace=team-a'), 403)).toBe('Permission denied');
    expect(await refused(parse(body, teamB, '?namespace=team-a'), 403)).toBe('Permission denied');
    expect(await refused(parse(body, ''), 403)).toBe('Permission denied');
    // The hostile file changes nothing: the check comes before the parse.
    expect(await refused(parse({ JobHCL: 'job "x" { region = file("/etc/passwd") }' }, readOnly), 403)).toBe(
      'Permission denied',
    );
  });

  it('no function runs: file(), templatefile(), fileset() and env() are refused by name, no file is read', async () => {
    for (const [name, call] of [
      ['file', 'file("/etc/passwd")'],
      ['templatefile', 'templatefile("/etc/hostname", {})'],
      ['fileset', 'fileset("/", "*")'],
      ['fileexists', 'fileexists("/etc/passwd") ? "yes" : "no"'],
      ['filebase64', 'filebase64("/etc/passwd")'],
      ['pathexpand', 'pathexpand("~")'],
      ['env', 'env("HOME")'],
      ['file', 'base64encode(file("/etc/shadow"))'],
      ['file', 'try(file("/etc/passwd"), "fallback")'],
      ['file', '[for f in ["/etc/passwd"] : file(f)]'],
    ]) {
      for (const spelling of [`region = ${call}`, `region = "x-\${${call}}"`, `meta = { a = ${call} }`]) {
        const text = await refused(parse({ JobHCL: `job "x" {\n  ${spelling}\n}` }), 400);
        expect(text).toContain(`Call to function "${name}"`);
        expect(text).not.toMatch(/root:|\/bin\/(ba)?sh/);
      }
    }
    // In a variable's default and in the variables file too.
    expect(
      await refused(parse({ JobHCL: 'variable "a" {\n  default = file("/etc/passwd")\n}\njob "x" {\n}' }), 400),
    ).toContain('Call to function "file"');
    expect(
      await refused(parse({ JobHCL: 'variable "a" {}\njob "x" {\n}', Variables: 'a = file("/etc/passwd")' }), 400),
    ).toContain('Call to function "file"');
  });

  it('a hostile expression is a 400 naming the limit it hit, never a stall, a 500 or a crashed parser', async () => {
    const hostile: Array<[string, RegExp]> = [
      ['range(100000000)', /more than 1024 values were generated/],
      ['format("%999999999d", 1)', /width or precision above 1000/],
      ['format("%.5000f", 1)', /width or precision above 1000/],
      ['indent(100000000, "a\\nb")', /at most 1000 spaces/],
      ['[for a in range(1000) : [for b in range(1000) : [for c in range(1000) : c]]]', /evaluation steps/],
      ['setproduct(range(1000), range(1000), range(1000))', /more than 10000 elements/],
      ['length(flatten([for a in range(1000) : range(1000)]))', /evaluation steps|more than 10000 elements/],
      [
        'join("", [for a in range(1000) : join("", [for b in range(1000) : "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"])])',
        /longer than 1048576 characters|evaluation steps/,
      ],
      ['"%{for a in range(1000)}%{for b in range(1000)}xxxxxxxxxx%{endfor}%{endfor}"', /longer than|evaluation steps/],
      [`${'!'.repeat(200)}true`, /nests more than 100 levels/],
      [`${'- '.repeat(200)}1`, /nests more than 100 levels/],
      [`${'1 + '.repeat(5000)}1`, /chains more than 1000 operators/],
      [`${'true ? 1 : '.repeat(500)}1`, /nests more than 100 levels/],
      ['pow(10, 400)', /not a finite number/],
      [
        'jsondecode("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]")',
        /^$/,
      ],
    ];
    for (const [expression, problem] of hostile) {
      const call = parse({ JobHCL: `job "x" {\n  meta = { a = ${expression} }\n}` });
      if (problem.source === '^$') {
        // Deep but small: answered, as Nomad answers it (a meta value that is not a string is its own 400).
        expect((await call).status).toBe(400);
        continue;
      }
      const text = await refused(call, 400);
      expect(text, expression.slice(0, 80)).toMatch(problem);
      expect(text).toMatch(/^Failed to parse job: job "x" › meta/);
    }
    // What would overflow the HCL parser's own stack is refused before it runs, and the parser still answers after.
    for (const [text, problem] of [
      [`job "x" {\n  region = ${'-'.repeat(8000)}1\n}`, /JobHCL has a run of 8000 unary operators: at most 256/],
      [`job "x" {\n  region = ${'! '.repeat(8000)}true\n}`, /JobHCL has a run of 8000 unary operators/],
      [`job "x" {\n  region = ${'true ? 1 : '.repeat(20000)}1\n}`, /JobHCL has 20000 "\?": at most 1000/],
      [
        `job "x" {\n  region = "${'%{ if true }'.repeat(3000)}x${'%{ endif }'.repeat(3000)}"\n}`,
        /template directives nested more than 64 deep/,
      ],
    ] as const)
      expect(await refused(parse({ JobHCL: text }), 400)).toMatch(problem);
    expect((await parse({ JobHCL: 'job "alive" {\n  region = "${- - 1}"\n}' })).body.Region).toBe('1');
    // A catastrophic-backtracking pattern for a backtracking engine: regex_replace runs on RE2, linear, and answers.
    const redos = await parse({
      JobHCL: `job "x" {\n  region = regex_replace("${'a'.repeat(5000)}!", "(a+)+$", "x")\n}`,
    });
    expect(redos.status, redos.text).toBe(200);
    expect(redos.body.Region).toBe(`${'a'.repeat(5000)}!`);
    expect((await parse({ JobHCL: 'job "still" {\n  region = upper("ok")\n}' })).body.Region).toBe('OK');
  });

  it('a variable validation condition goes through the same limits: never a stall, never another variable', async () => {
    const withCondition = (condition: string) =>
      `variable "n" {\n  type = number\n  default = 1000\n  validation {\n    condition = ${condition}\n    error_message = "no"\n  }\n}\njob "x" {\n}`;
    for (const [condition, problem] of [
      [
        'length([for a in range(var.n) : [for b in range(var.n) : [for c in range(var.n) : c]]]) > 0',
        /variable "n": Expression too costly; .*evaluation steps/,
      ],
      ['length(range(var.n * 100000)) > 0', /more than 1024 values were generated/],
      ['length(format("%999999999d", var.n)) > 0', /width or precision above 1000/],
      [`${'!'.repeat(200)}(var.n > 0)`, /nests more than 100 levels/],
    ] as const)
      expect(await refused(parse({ JobHCL: withCondition(condition) }), 400)).toMatch(problem);
    // The condition sees only var.<its own name>: another variable, a local or a run-time value is refused, not read.
    for (const other of ['var.secret', 'local.l', 'env.HOME', 'attr.kernel.name'])
      expect(
        await refused(
          parse({
            JobHCL: `variable "secret" {\n  default = "s"\n}\nlocals {\n  l = 1\n}\n${withCondition(`var.n > 0 && ${other} != ""`)}`,
          }),
          400,
        ),
      ).toMatch(
        /Invalid reference in variable validation; The condition for variable "n" can only refer to the variable itself/,
      );
    // The error carries the block's message, never the value of another variable.
    const failed = await refused(
      parse({ JobHCL: `variable "secret" {\n  default = "hunter2"\n}\n${withCondition('var.n < 10')}` }),
      400,
    );
    expect(failed).toMatch(/Invalid value for default variable; no/);
    expect(failed).not.toContain('hunter2');
    expect((await parse({ JobHCL: withCondition('var.n == 1000') })).status).toBe(200);
  });

  it('YAML aliases that would expand to billions of values (billion laughs) are a 400, never a stall', async () => {
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let level = 1; level < 10; level++) {
      const previous = String.fromCharCode(96 + level);
      const name = String.fromCharCode(97 + level);
      levels.push(`${name}: &${name} [${Array(10).fill(`*${previous}`).join(', ')}]`);
    }
    const bomb = levels.join('\\n');
    for (const expression of [
      `length(yamldecode("${bomb}").j)`,
      `jsonencode(yamldecode("${bomb}"))`,
      `can(yamldecode("${bomb}"))`,
      `try(yamldecode("${bomb}"), "fallback")`,
    ]) {
      const text = await refused(parse({ JobHCL: `job "x" {\n  meta = { a = ${expression} }\n}` }), 400);
      expect(text, expression.slice(0, 40)).toMatch(
        /Expression too costly; the YAML's aliases expand to more than 10000 values/,
      );
    }
    // Nesting deeper than the evaluator's bound is refused by name; a self-referencing anchor is an error, not a loop.
    const deep = `${'- '.repeat(150)}1`; // block sequences, one inside the next: no bracket for the pre-parse bound
    expect(await refused(parse({ JobHCL: `job "x" {\n  region = jsonencode(yamldecode("${deep}"))\n}` }), 400)).toMatch(
      /the YAML nests more than 100 levels/,
    );
    expect(await refused(parse({ JobHCL: 'job "x" {\n  region = yamldecode("a: &s [1, *s]").a\n}' }), 400)).toMatch(
      /cannot refer to anchor "s" from inside its own definition/,
    );
    // A few aliases are fine: they expand as shared values.
    const fine = await parse({
      JobHCL: `job "x" {\n  region = jsonencode(yamldecode("${levels.slice(0, 3).join('\\n')}").c[0])\n}`,
    });
    expect(fine.status, fine.text).toBe(200);
    expect(JSON.parse(fine.body.Region)).toHaveLength(10);
  });

  it('dynamic blocks that would generate a million blocks are a 400 before they are built', async () => {
    const hcl = `job "x" {
  dynamic "group" {
    for_each = range(1000)
    labels   = ["g\${group.key}"]
    content {
      dynamic "task" {
        for_each = range(1000)
        labels   = ["t\${task.key}"]
        content {
          driver = "raw_exec"
        }
      }
    }
  }
}`;
    expect(await refused(parse({ JobHCL: hcl }), 400)).toMatch(/Too many dynamic blocks; .*more than 1000 blocks/);
    // The iterator is bound only inside its content: elsewhere its name is a run-time variable, kept as text.
    const out = await parse({
      JobHCL:
        'job "x" {\n  region = "${group.key}"\n  dynamic "group" {\n    for_each = ["a"]\n    labels = [group.value]\n    content {}\n  }\n}',
    });
    expect(out.status, out.text).toBe(200);
    expect(out.body.Region).toBe('${group.key}');
    expect(out.body.TaskGroups[0].Name).toBe('a');
  });

  it('a run-time variable is kept as text, never resolved against the server (env, attr, NOMAD_*)', async () => {
    const out = await parse({ JobHCL: 'job "x" {\n  region = "${env.HOME}-${NOMAD_TOKEN}"\n}' });
    expect(out.status, out.text).toBe(200);
    expect(out.body.Region).toBe('${env.HOME}-${NOMAD_TOKEN}');
  });

  it('brackets nested past the bound are a 400 before the parser runs; the parser then still answers', async () => {
    const deep = `job "x" {\n  meta = { a = ${'['.repeat(10_000)}${']'.repeat(10_000)} }\n}`;
    expect(await refused(parse({ JobHCL: deep }), 400)).toMatch(
      new RegExp(`^JobHCL nests brackets \\d+ levels deep: at most ${maxHclNesting} are taken$`),
    );
    const blocks = `job "x" {\n${'config {\n'.repeat(5_000)}${'}\n'.repeat(5_000)}}`;
    expect(await refused(parse({ JobHCL: blocks }), 400)).toContain('nests brackets');
    expect((await parse({ JobHCL: 'job "still" {\n}' })).status).toBe(200);
  });

  it('a JobHCL over a job’s size is a 400; a body over the services’ limit is refused before parsing', async () => {
    const big = `job "x" {\n  meta {\n${'    k = "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"\n'.repeat(Math.ceil(maxJobHclBytes / 60))}  }\n}`;
    expect(await refused(parse({ JobHCL: big }), 400)).toMatch(/^JobHCL is \d+ bytes: at most \d+ are taken$/);
    const huge = 'x'.repeat(2 * 1024 * 1024);
    const text = await refused(parse({ JobHCL: huge }), 413);
    expect(text).not.toContain('xxxx');
  });

  it('garbage of every kind is a 4xx, never a 500', async () => {
    const inputs = [
      '{',
      '}',
      '"',
      '${',
      'job',
      'job "x"',
      'job "x" {',
      'job "x" { group "g" { } }',
      'job "x" {\n  group "g" {\n    task "t" {\n      config = 3\n    }\n  }\n}',
      'job "x" {\n  group "g" {\n    count = "many"\n  }\n}',
      'job "x" {\n  group = 1\n}',
      'job "x" {\n  meta = 1\n}',
      'job "x" {\n  update = "fast"\n}',
      'job "x" {\n  region = null\n}',
      'job "x" {\n  region = "${"\n}',
      'job "x" {\n  region = var\n}',
      'job "x" {\n  region = local\n}',
      'job "x" {\n  region = var.a.b\n}',
      'variable "a" {\n  default = { b = 1 }\n}\njob "x" {\n  region = var.a.c\n}',
      'variable "a" {\n  default = [1]\n}\njob "x" {\n  region = "${var.a}"\n  datacenters = ["${var.a}-x"]\n}',
      'locals {\n  a = local.b\n  b = local.a\n}\njob "x" {\n}',
      'variable "a" {\n  validation {\n    condition = true\n  }\n}\njob "x" {\n}',
      '\u0000',
      'job "\u202e" {\n}',
    ];
    for (const JobHCL of inputs) {
      const out = await parse({ JobHCL });
      expect(out.status, `${JSON.stringify(JobHCL)}: ${out.text}`).toBeGreaterThanOrEqual(200);
      expect(out.status, `${JSON.stringify(JobHCL)}: ${out.text}`).toBeLessThan(500);
    }
    for (const body of ['not json', '[]', 'null', '{"JobHCL": ["a"]}', '{"Variables": 1, "JobHCL": "job \\"x\\" {}"}'])
      expect((await h.call('POST', '/v1/jobs/parse', { token: root, body })).status).toBe(400);
  });
});
