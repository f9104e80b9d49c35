// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are HCL expressions, `${…}` is their syntax
/**
 * The CIDR functions of a job file (`job-parse/hcl-functions-cidr.ts`) held to go-cty-funcs/cidr's (Terraform's
 * cidr functions, which Nomad's jobspec2/functions.go takes): Debian ships no go-cty-funcs, so the cases are the
 * examples of Terraform's function documentation (cidrhost, cidrnetmask, cidrsubnet, cidrsubnets pages) and the
 * errors its cidr tests state.
 */
import { describe, expect, it } from 'vitest';
import { evaluateString } from '../../packages/core/src/scheduler/cluster/job-parse/expressions.ts';

const evaluated = (expression: string) =>
  evaluateString(`\${${expression}}`, { variables: new Map(), locals: new Map() }, 'test');

describe('cidr functions: Terraform’s documented answers', () => {
  const cases: Array<[string, unknown]> = [
    ['cidrhost("10.12.112.0/20", 16)', '10.12.112.16'],
    ['cidrhost("10.12.112.0/20", 268)', '10.12.113.12'],
    ['cidrhost("fd00:fd12:3456:7890:00a2::/72", 34)', 'fd00:fd12:3456:7890::22'],
    ['cidrhost("10.12.112.0/20", -1)', '10.12.127.255'],
    ['cidrnetmask("172.16.0.0/12")', '255.240.0.0'],
    ['cidrnetmask("10.0.0.0/8")', '255.0.0.0'],
    ['cidrsubnet("172.16.0.0/12", 4, 2)', '172.18.0.0/16'],
    ['cidrsubnet("10.1.2.0/24", 4, 15)', '10.1.2.240/28'],
    ['cidrsubnet("fd00:fd12:3456:7890::/56", 16, 162)', 'fd00:fd12:3456:7800:a200::/72'],
    ['cidrsubnets("10.1.0.0/16", 4, 4, 8, 4)', ['10.1.0.0/20', '10.1.16.0/20', '10.1.32.0/24', '10.1.48.0/20']],
    [
      'cidrsubnets("fd00:fd12:3456:7890::/56", 16, 16, 16, 32)',
      [
        'fd00:fd12:3456:7800::/72',
        'fd00:fd12:3456:7800:100::/72',
        'fd00:fd12:3456:7800:200::/72',
        'fd00:fd12:3456:7800:300::/88',
      ],
    ],
    ['[for n in cidrsubnets("10.0.0.0/8", 8, 8) : cidrhost(n, 1)]', ['10.0.0.1', '10.1.0.1']],
  ];
  for (const [expression, expected] of cases)
    it(expression, () => {
      expect(evaluated(expression)).toEqual(expected);
    });

  const errors: Array<[string, RegExp]> = [
    ['cidrhost("10.0.0.0/30", 4)', /does not accommodate a host numbered 4/],
    ['cidrnetmask("fd00::/64")', /only IPv4/],
    ['cidrsubnet("10.0.0.0/30", 4, 0)', /insufficient address space to extend prefix of 30 by 4/],
    ['cidrsubnet("10.0.0.0/24", 2, 4)', /does not accommodate a subnet numbered 4/],
    ['cidrsubnets("10.0.0.0/24", 1, 1, 1)', /not enough remaining address space for a subnet with a prefix of 25 bits/],
    ['cidrhost("not a cidr", 1)', /invalid CIDR address/],
  ];
  for (const [expression, problem] of errors)
    it(`${expression} is a 400`, () => {
      expect(() => evaluated(expression)).toThrow(problem);
    });
});
