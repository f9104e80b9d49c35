/**
 * Differential test of ACL policy parsing and path decisions against hashicorp/hcl v1 (Debian's 1.0.0, built
 * into test/differential/hcl/policy-oracle.go with a Go port of vault/policy.go's validation and vault/acl.go's
 * lookup). Every policy is parsed by ours and by the oracle; the parsed rules and the capabilities of a handful of
 * paths must agree, except for the known differences in the table below, each checked against the source of the
 * hcl fork Vault 1.21+ uses (v1.0.1-vault-7) or a deliberate refusal of ours.
 */
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { PolicyParseError, parsePolicyRules } from '../../packages/core/src/scheduler/acl/policy-rules.ts';
import { ApiError } from '../../packages/core/src/secrets/framework/errors.ts';
import { Acl } from '../../packages/core/src/secrets/policies/acl.ts';
import { type PathRule, parsePolicyDocument } from '../../packages/core/src/secrets/policies/policy-document.ts';
import { buildGoHarness, runGoHarness } from '../support/go-harness.ts';
import {
  fixedCases,
  generatedCases,
  generatedNomadCases,
  nomadFixedCases,
  pathsFor,
  writeBodies,
  writePathsFor,
} from './hcl/policy-corpus.ts';

const oracleSource = fileURLToPath(new URL('./hcl/policy-oracle.go', import.meta.url));

interface OracleRule {
  path: string;
  capabilities: string[];
  allowed?: Record<string, unknown[]>;
  denied?: Record<string, unknown[]>;
  required?: string[];
}

interface OracleVerdict {
  error?: string;
  forkRefuses?: string;
  merged?: string;
  unsupported?: string[];
  caseClash?: boolean;
  globName?: string;
  rules: OracleRule[];
  nomad?: NomadRules;
  checks: string[][];
  writes: boolean[];
}

interface NomadRules {
  namespaces: Record<string, string[]>;
  simple: Record<string, string>;
  scale?: string[];
}

/**
 * Where Debian's hcl 1.0.0 (the oracle's parser) and Vault 1.21+ part ways, or where we refuse on purpose. A case
 * in one of these classes is not a mismatch when ours refuses it.
 */
const knownDifferences = [
  {
    name: 'repeated attribute (fork refuses)',
    applies: (v: OracleVerdict) => !v.error && !!v.forkRefuses?.startsWith('duplicate'),
    reason:
      'hcl 1.0.0 decodes `k = …` twice in one HCL object (merging); v1.0.1-vault-7 hcl/parser/parser.go objectList refuses a second item with an assignment whose key token has the same text ("Each argument can only be defined once"). JSON is not checked by the fork.',
  },
  {
    name: 'error before } (fork reports)',
    applies: (v: OracleVerdict) => !v.error && v.forkRefuses === 'error before }',
    reason:
      'hcl 1.0.0 objectType ignores an error from the object list when the parser stands on `}` (`k = }`); v1.0.1-vault-7 objectType returns it (`else if err != nil { return nil, err }`).',
  },
  {
    name: 'refused by design: duplicates the fork merges',
    applies: (v: OracleVerdict) => !v.error && !v.forkRefuses && !!v.merged,
    reason:
      'Vault 1.21+ refuses only an HCL attribute whose key is written the same way twice; it merges `x` next to `"x"`, a JSON member given twice in one object, a path given twice (blocks, JSON members or list elements, `a` and `/a`), a path field from two items and a required parameter named twice (lists appended, the last `policy` winning). Issue 12 asks for duplicates to be refused in both syntaxes: refused here with a 400 naming the key twice given and where, which never grants more than Vault.',
  },
  {
    name: 'key we cannot honour (refused by design)',
    applies: (v: OracleVerdict) => !v.error && !v.forkRefuses && (v.unsupported?.length ?? 0) > 0,
    reason:
      'min_wrapping_ttl, max_wrapping_ttl, mfa_methods, control_group, subscribe_event_types and templated paths ({{identity.…}}) mean something in Vault that this service has no machinery for: a 400 naming them, never a weaker or literal policy.',
  },
  {
    name: 'parameter names differing only in case (refused)',
    applies: (v: OracleVerdict) => !v.error && !v.forkRefuses && !(v.unsupported?.length ?? 0) && !!v.caseClash,
    reason:
      'vault/policy.go lower-cases names while ranging over a Go map, so which of "X" and "x" survives is random: no single meaning.',
  },
  {
    name: 'parameter name with a * that is not the whole name (refused by design)',
    applies: (v: OracleVerdict) =>
      !v.error && !v.forkRefuses && !(v.unsupported?.length ?? 0) && !v.caseClash && !!v.globName,
    reason:
      'Vault matches a parameter name such as "foo*" (or any name in required_parameters containing *) literally, never as the glob it reads as, so a denied "secret_*" denies nothing; its nested-constraints PR #16309 (unmerged) refuses such names. Refused here with a 400 naming the parameter (issue 23 §6).',
  },
];

interface Ours {
  error?: string;
  rules: OracleRule[];
  checks: string[][];
  writes: boolean[];
}

interface Check {
  path: string;
  data?: Record<string, unknown>;
}

function ours(text: string, checks: Check[]): Ours {
  const paths = checks.map((check) => check.path);
  const writes = checks.filter((check) => check.data);
  let rules: PathRule[];
  try {
    rules = parsePolicyDocument(text);
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 400) throw error;
    return { error: error.message, rules: [], checks: paths.map(() => ['deny']), writes: writes.map(() => false) };
  }
  const acl = new Acl([rules]);
  return {
    rules: rules.map((rule) => ({
      path: rule.pattern,
      capabilities: [...rule.capabilities].sort(),
      ...(rule.parameters?.allowed ? { allowed: Object.fromEntries(rule.parameters.allowed) } : {}),
      ...(rule.parameters?.denied ? { denied: Object.fromEntries(rule.parameters.denied) } : {}),
      ...(rule.parameters?.required ? { required: rule.parameters.required } : {}),
    })),
    checks: paths.map((p) => acl.capabilities(p).sort()),
    writes: writes.map((check) => acl.allows(check.path, 'update', false, check.data)),
  };
}

/** JSON with sorted keys and empty parameter maps dropped, so equal meanings compare equal. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .filter((k) => !((k === 'allowed' || k === 'denied') && Object.keys(v[k] ?? {}).length === 0))
          .map((k) => [k, v[k]]),
      );
    }
    return v;
  });
}

interface Tally {
  compared: number;
  checks: number;
  writes: number;
  known: Record<string, number>;
  mismatches: Record<string, string[]>;
}

function compare(tally: Tally, text: string, checks: Check[], vault: OracleVerdict): void {
  const paths = checks.map((check) => check.path);
  const writes = checks.filter((check) => check.data);
  tally.compared++;
  tally.checks += paths.length - writes.length;
  tally.writes += writes.length;
  const mine = ours(text, checks);
  const note = (kind: string, detail: string) => {
    tally.mismatches[kind] ??= [];
    tally.mismatches[kind].push(`${JSON.stringify(text)}\n    ${detail}`);
  };
  const vaultRefuses = !!vault.error || !!vault.forkRefuses;
  const known = knownDifferences.find((difference) => difference.applies(vault));
  if (vaultRefuses || known) {
    if (known) tally.known[known.name] = (tally.known[known.name] ?? 0) + 1;
    if (mine.error === undefined) {
      const grants = mine.checks.some((caps) => !(caps.length === 1 && caps[0] === 'deny'));
      note(
        grants ? 'ours accepts and grants what Vault refuses' : 'ours accepts what Vault refuses',
        `vault: ${vault.error ?? vault.forkRefuses ?? known?.name}`,
      );
    } else if (
      known?.name.startsWith('refused by design: duplicates') &&
      !vault.caseClash &&
      !vault.globName &&
      !vault.unsupported?.length &&
      !/twice/.test(mine.error)
    ) {
      // With no other reason to refuse, ours must say what is given twice.
      note('refusal does not name the duplicate', `ours: ${mine.error}`);
    } else if (
      known?.name.startsWith('key we cannot') &&
      !vault.unsupported?.some((key) =>
        mine.error?.includes(key.replace('templated path', 'templated policy paths')),
      ) &&
      // Another path of the same policy may be refused first, for a reason of its own.
      !(vault.caseClash && /name the same parameter/.test(mine.error)) &&
      !(vault.globName && /parameter name ".*\*.*" is refused/.test(mine.error))
    ) {
      note('refusal does not name the key', `ours: ${mine.error}`);
    } else if (
      known?.name.startsWith('parameter name with a *') &&
      !/parameter name ".*\*.*" is refused/.test(mine.error)
    ) {
      note('refusal does not name the parameter', `ours: ${mine.error}`);
    }
    return;
  }
  if (mine.error !== undefined) {
    note('ours refuses what Vault accepts', `ours: ${mine.error}`);
    return;
  }
  if (canonical(mine.rules) !== canonical(vault.rules)) {
    note('different rules', `ours:  ${canonical(mine.rules)}\n    vault: ${canonical(vault.rules)}`);
  }
  paths.forEach((p, index) => {
    const a = mine.checks[index] as string[];
    const b = vault.checks[index] as string[];
    if (canonical(a) === canonical(b)) return;
    const more = a.some((capability) => capability !== 'deny' && !b.includes(capability));
    note(
      more ? 'ours grants more on a path' : 'ours grants less on a path',
      `${p}: ours ${a.join(',')} vault ${b.join(',')}`,
    );
  });
  writes.forEach((check, index) => {
    if (mine.writes[index] === vault.writes[index]) return;
    note(
      mine.writes[index] ? 'ours allows a write Vault refuses' : 'ours refuses a write Vault allows',
      `update ${check.path} ${JSON.stringify(check.data)}`,
    );
  });
}

describe('ACL policies against hashicorp/hcl v1 and vault/policy.go', () => {
  let oracle: string;
  beforeAll(() => {
    oracle = buildGoHarness(oracleSource);
  }, 600_000);

  const run = async (texts: string[]) => {
    const cases = texts.map((text) => {
      const paths = pathsFor(text);
      // Updates of the policy's own paths with bodies its parameter constraints talk about.
      const writes = writePathsFor(text).flatMap((path) => writeBodies.map((data) => ({ path, data })));
      return { kind: 'vault', text, checks: [...paths.map((path): Check => ({ path })), ...writes] };
    });
    const verdicts = await runGoHarness<(typeof cases)[number], OracleVerdict>(oracle, cases);
    const tally: Tally = { compared: 0, checks: 0, writes: 0, known: {}, mismatches: {} };
    cases.forEach((c, index) => {
      compare(tally, c.text, c.checks, verdicts[index] as OracleVerdict);
    });
    return tally;
  };

  const report = (label: string, tally: Tally) => {
    const mismatchCounts = Object.fromEntries(
      Object.entries(tally.mismatches).map(([kind, list]) => [kind, list.length]),
    );
    console.log(
      `[hcl-policies] ${label}: ${tally.compared} policies, ${tally.checks} capability look-ups and ${tally.writes} writes with parameters compared; known differences ${JSON.stringify(tally.known)}; mismatches ${JSON.stringify(mismatchCounts)}`,
    );
    for (const [kind, list] of Object.entries(tally.mismatches)) {
      console.log(`  ${kind}:\n  ${list.slice(0, 5).join('\n  ')}`);
    }
  };

  it('agrees on the fixed tricky cases, which exercise every known difference', async () => {
    const tally = await run(fixedCases);
    report('fixed cases', tally);
    for (const difference of knownDifferences)
      console.log(`  known difference "${difference.name}": ${difference.reason}`);
    expect(tally.mismatches).toEqual({});
    expect(Object.keys(tally.known).sort()).toEqual(knownDifferences.map((difference) => difference.name).sort());
  });

  it('agrees on a generated corpus of HCL and JSON policies', async () => {
    const tally = await run(generatedCases(600, 20261123));
    report(`generated corpus (seed 20261123)`, tally);
    expect(tally.compared).toBe(600);
    expect(tally.mismatches).toEqual({});
  });
});

/** Nomad's parse (nomad/acl/policy.go, strict) as the oracle ports it, against ours (scheduler/acl/policy-rules.ts). */
describe('Nomad ACL policies against hashicorp/hcl v1 and nomad/acl/policy.go', () => {
  let oracle: string;
  beforeAll(() => {
    oracle = buildGoHarness(oracleSource);
  }, 600_000);

  /** Where ours refuses what Nomad accepts, on purpose. */
  const nomadKnown = [
    {
      name: 'attribute given twice (refused here, merged by Nomad)',
      applies: (v: OracleVerdict) => !v.error && !!v.forkRefuses?.startsWith('duplicate'),
      reason:
        'Nomad pins hcl v1.0.1-nomad-1, whose parser has no duplicate check: `policy = "deny"` then `policy = "write"` grants write. Refused here, as Vault 1.21+ refuses it.',
    },
    {
      name: 'refused by design: duplicates Nomad merges',
      applies: (v: OracleVerdict) => !v.error && !v.forkRefuses && !!v.merged,
      reason:
        'Nomad merges a key given twice however it is written (`policy` next to `"policy"`, a JSON member twice) and a rule given twice (two `namespace "default"` blocks are unioned, two `node` blocks keep the last policy). Refused here with a 400 naming it, as for Vault policies.',
    },
    {
      name: 'error before } (refused here)',
      applies: (v: OracleVerdict) => !v.error && v.forkRefuses === 'error before }',
      reason:
        "hcl v1.0.1-nomad-1 keeps 1.0.0's objectType, which drops an error when the parser stands on `}`; refused here as in Vault 1.21+.",
    },
    {
      name: 'policy "scale" on agent/node/quota (refused here)',
      applies: (v: OracleVerdict) => !v.error && (v.nomad?.scale?.length ?? 0) > 0,
      reason:
        "Nomad's isPolicyValid accepts `scale` for every rule, but its ACL gives agent, node and quota nothing for it; refused so a policy never means less than it reads.",
    },
  ];

  const ourNomad = (text: string): { error?: string; rules?: NomadRules } => {
    try {
      const rules = parsePolicyRules(text);
      const namespaces: Record<string, string[]> = {};
      for (const { name, capabilities } of rules.namespaces)
        namespaces[name] = [...new Set([...(namespaces[name] ?? []), ...capabilities])].sort();
      const simple: Record<string, string> = {};
      for (const kind of ['agent', 'node', 'operator'] as const) if (rules[kind]) simple[kind] = rules[kind] as string;
      return { rules: { namespaces, simple } };
    } catch (error) {
      if (error instanceof PolicyParseError) return { error: error.message };
      throw error;
    }
  };

  const run = async (texts: string[]) => {
    const verdicts = await runGoHarness<{ kind: string; text: string; checks: [] }, OracleVerdict>(
      oracle,
      texts.map((text) => ({ kind: 'nomad', text, checks: [] })),
    );
    const tally: Tally = { compared: 0, checks: 0, writes: 0, known: {}, mismatches: {} };
    texts.forEach((text, index) => {
      const vault = verdicts[index] as OracleVerdict;
      tally.compared++;
      const mine = ourNomad(text);
      const note = (kind: string, detail: string) => {
        tally.mismatches[kind] ??= [];
        tally.mismatches[kind].push(`${JSON.stringify(text)}\n    ${detail}`);
      };
      const known = nomadKnown.find((difference) => difference.applies(vault));
      if (vault.error || known) {
        if (known) tally.known[known.name] = (tally.known[known.name] ?? 0) + 1;
        if (!mine.error) note('ours accepts what Nomad refuses', `nomad: ${vault.error ?? known?.name}`);
        else if (known?.name.startsWith('refused by design') && !/twice/.test(mine.error))
          note('refusal does not name the duplicate', `ours: ${mine.error}`);
        return;
      }
      if (mine.error) {
        note('ours refuses what Nomad accepts', `ours: ${mine.error}`);
        return;
      }
      if (canonical(mine.rules) !== canonical({ namespaces: vault.nomad?.namespaces, simple: vault.nomad?.simple }))
        note('different rules', `ours:  ${canonical(mine.rules)}\n    nomad: ${canonical(vault.nomad)}`);
    });
    return tally;
  };

  const report = (label: string, tally: Tally) => {
    const mismatchCounts = Object.fromEntries(
      Object.entries(tally.mismatches).map(([kind, list]) => [kind, list.length]),
    );
    console.log(
      `[hcl-policies] nomad ${label}: ${tally.compared} policies compared; known differences ${JSON.stringify(tally.known)}; mismatches ${JSON.stringify(mismatchCounts)}`,
    );
    for (const [kind, list] of Object.entries(tally.mismatches))
      console.log(`  ${kind}:\n  ${list.slice(0, 5).join('\n  ')}`);
  };

  it('agrees on the fixed cases', async () => {
    const tally = await run(nomadFixedCases);
    report('fixed cases', tally);
    for (const difference of nomadKnown) console.log(`  known difference "${difference.name}": ${difference.reason}`);
    expect(tally.mismatches).toEqual({});
  });

  it('agrees on a generated corpus', async () => {
    const generated = generatedNomadCases(300, 20261124);
    const tally = await run(generated);
    report('generated corpus (seed 20261124)', tally);
    expect(tally.compared).toBe(300);
    expect(tally.mismatches).toEqual({});
  });
});
