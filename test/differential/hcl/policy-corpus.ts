/**
 * Policy documents for the differential test: fixed tricky cases (each one a way ours used to differ from Vault)
 * and a seeded fast-check generator of HCL and JSON policies mixing valid and broken grammar.
 */
import fc from 'fast-check';

export interface PolicyCase {
  text: string;
  /** Paths whose capabilities are compared (as sys/capabilities reports them). */
  paths: string[];
}

const q = (text: string) => JSON.stringify(text);

/** The cases the issue names, plus the grammar corners found reading hcl's scanner, parser and decoder. */
export const fixedCases: string[] = [
  // Duplicates: HCL attribute twice (the fork refuses), `x` then `"x"` (different source text: merged), JSON (merged).
  'path "a" {\n capabilities = ["deny"]\n capabilities = ["read"]\n}',
  'path "a" {\n "capabilities" = ["deny"]\n "capabilities" = ["read"]\n}',
  'path "a" {\n capabilities = ["deny"]\n "capabilities" = ["read"]\n}',
  'path "a" { capabilities = ["update"]\n denied_parameters = { x = ["a"], x = ["b"] } }',
  'path "a" { capabilities = ["update"]\n denied_parameters = { x = ["a"] "x" = ["b"] } }',
  'path "a" { capabilities = ["update"]\n denied_parameters = { x = [] "x" = ["b"] } }',
  'path "a" { capabilities = ["update"]\n denied_parameters = { x = ["a"] }\n denied_parameters = { y = ["b"] } }',
  'path "a" { capabilities = ["read"] }\npath "a" { capabilities = ["deny"] }',
  'name = "x"\nname = "y"\npath "a" { capabilities = ["read"] }',
  '{"path": {"a": {"capabilities": ["deny"], "capabilities": ["read"]}}}',
  '{"path": {"a": {"capabilities": ["read"]}, "a": {"capabilities": ["deny"]}}}',
  '{"path": {"a": {"capabilities": ["read"]}}, "path": {"a": {"capabilities": ["deny"]}}}',
  '{"path": {"a": {"capabilities": ["update"], "denied_parameters": {"x": ["a"], "x": ["b"]}}}}',
  '{"path": {"a": {"capabilities": ["update"], "denied_parameters": {"x": []}, "denied_parameters": {"x": ["b"]}}}}',
  // More repeats Vault merges and ours refuses: a path with and without `/`, in a JSON list, a field in two forms.
  'path "a" { capabilities = ["read"] }\npath "/a" { capabilities = ["deny"] }',
  '{"path": [{"a": {"capabilities": ["read"]}}, {"a": {"capabilities": ["deny"]}}]}',
  'path "a" { capabilities = ["update"]\n required_parameters = ["x", "X"] }',
  'path "a" { capabilities = ["update"]\n denied_parameters = { x = ["a"] }\n denied_parameters "y" { } }',
  'path "a" { capabilities = ["update"]\n allowed_parameters "x" { }\n allowed_parameters "x" { } }',
  'path "a" { capabilities = ["read"]\n "\u0063apabilities" = ["deny"] }',
  // JSON booleans in lists are dropped; null; leading slash.
  '{"path": {"a": {"capabilities": ["update"], "denied_parameters": {"flag": [true]}}}}',
  '{"path": {"a": {"capabilities": ["update"], "allowed_parameters": {"flag": [false, "x"]}}}}',
  '{"path": {"a": {"capabilities": ["update"], "allowed_parameters": {"flag": [null]}}}}',
  '{"path": {"a": {"capabilities": ["read"], "policy": null}}}',
  '{"name": null, "path": {"a": {"capabilities": ["read"]}}}',
  'path "/secret/x" { capabilities = ["read"] }',
  'path "//secret/x" { capabilities = ["read"] }',
  '{"path": {"/secret/*": {"capabilities": ["read"]}}}',
  // Grammar Vault accepts.
  'path "a" {\n comment = "why"\n capabilities = ["read"]\n}',
  'path "a" { comment = { any = [1, "thing"] } capabilities = ["read"] }',
  'path "secret/a+b/*" { capabilities = ["read"] }',
  'path "secret/+foo" { capabilities = ["read"] }',
  'path "secret/*/x" { capabilities = ["read"] }',
  'path "*/x" { capabilities = ["read"] }',
  'path "a" { capabilities = ["update"]\n allowed_parameters = { "foo*" = [], "*bar" = ["x"] } }',
  'path "a" { capabilities = ["update"]\n allowed_parameters { "foo" = ["x"] } }',
  'path "a" { capabilities = ["update"]\n allowed_parameters "foo" { } }',
  'path "a" { capabilities = ["read"] },\npath "b" { capabilities = ["read"] },',
  'path "a\\x2fb" { capabilities = ["read"] }',
  'path "caf\\u00e9" { capabilities = ["read"] }',
  'path "\\101" { capabilities = ["read"] }',
  'path "a" { capabilities = ["update"]\n allowed_parameters = { clé = ["é"] } }',
  'path "a" { capabilities = ["update"]\n allowed_parameters = { n = [0x1F, 010, 1.5, -2, 1e3] } }',
  'path "a" { capabilities = ["update"]\n allowed_parameters = { n = [<<EOF\nline\nEOF\n] } }',
  'path "a" {\n capabilities = [\n "read", # why\n "list" // more\n /* and */ ]\n}',
  'path "a" { capabilities = [, "read",, ] }',
  'path "a" { capabilities = ["read"] } # trailing',
  '{"path": {"a": {"capabilities": ["read"],}}}',
  '{"path": {"a": {"capabilities": ["read"]}}',
  '{"path": {"a": {"capabilities": ["read" "list"]}}}',
  '{"path": {"a": {"capabilities": [["read"], "list"]}}}',
  '{"path": {"a": {"capabilities": ["read"]} "b": {"capabilities": ["read"]}}}',
  '{"path": [{"a": {"capabilities": ["read"]}}, {"b": {"capabilities": ["list"]}}]}',
  '{"path" "a": {"capabilities": ["read"]}}',
  // Grammar Vault refuses.
  '{"path": {"a\\/b": {"capabilities": ["read"]}}}',
  'path "a\\/b" { capabilities = ["read"] }',
  'path "a" { capabilities = null }',
  'path = { "secret/x" = { capabilities = ["read"] } }',
  'path true { capabilities = ["read"] }',
  'path "a" true { capabilities = ["read"] }',
  'path "a" { capabilities = "read" }',
  'path "a" { Capabilities = ["read"] }',
  'PATH "a" { capabilities = ["read"] }',
  'path "a" { capabilities = ["raed"] }',
  'path "a" { capabilities = ["deny", "raed"] }',
  'path "a" { capabilities = ["raed", "deny"] }',
  'path "a" { policy = "admin" }',
  'path "a+*" { capabilities = ["read"] }',
  'path "a/+*" { capabilities = ["read"] }',
  'path "a" { capabilities = ["read"] ',
  'path "a" { capabilities = ["read"] }}',
  'path "a" {\n capabilities = <<EOF\nread\nEOF}',
  'path "a" { capabilities = ["read"] } x = ',
  'path "a" { capabilities = } }',
  // Keys Vault knows that this service cannot honour.
  'path "a" { capabilities = ["read"]\n min_wrapping_ttl = "1s" }',
  'path "a" { capabilities = ["read"]\n max_wrapping_ttl = 90 }',
  'path "a" { capabilities = ["read"]\n mfa_methods = ["totp"] }',
  'path "a" { capabilities = ["read"]\n control_group = { factor "ops" { identity { group_names = ["ops"] approvals = 1 } } } }',
  'path "a" { capabilities = ["subscribe"]\n subscribe_event_types = ["kv*"] }',
  'path "a" { capabilities = ["deny"]\n mfa_methods = ["totp"] }',
  // Capabilities Vault knows.
  'path "a" { capabilities = ["patch", "subscribe", "recover"] }',
  'path "a" { policy = "write" capabilities = ["patch"] }',
  'path "a" { policy = "deny" capabilities = ["read"] }',
  'path "a" { capabilities = ["update"]\n allowed_parameters = { "X" = ["a"], "x" = ["b"] } }',
  // Precedence corners.
  'path "secret/+" { capabilities = ["list"] }\npath "secret/private/*" { capabilities = ["deny"] }',
  'path "a/*" { capabilities = ["read"] }\npath "a/+/c" { capabilities = ["deny"] }\npath "a/b/*" { capabilities = ["update"] }',
  'path "+" { capabilities = ["read"] }\npath "*" { capabilities = ["list"] }',
  'path "" { capabilities = ["read"] }\npath "/" { capabilities = ["list"] }',
  'path "a" { capabilities = [] }\npath "a*" { capabilities = ["read"] }',
  // Vault's ordering among non-exact matches: first wildcard later, then not a prefix, fewer +, longer, larger.
  'path "a/b*" { capabilities = ["read"] }\npath "a/+" { capabilities = ["list"] }',
  'path "a/b/+/c" { capabilities = ["read"] }\npath "a/+/b/c" { capabilities = ["list"] }',
  'path "a/+/b" { capabilities = ["read"] }\npath "a/+/b*" { capabilities = ["list"] }',
  'path "a/+" { capabilities = ["read"] }\npath "a/*" { capabilities = ["list"] }',
  'path "a/b/+/c" { capabilities = ["read"] }\npath "a/+/+/c" { capabilities = ["list"] }',
  'path "a/+/b/ab*" { capabilities = ["read"] }\npath "a/+/b/a*" { capabilities = ["list"] }',
  'path "a/+/ab" { capabilities = ["read"] }\npath "a/+/ba" { capabilities = ["list"] }\npath "a/+/a*" { capabilities = ["update"] }',
  'path "+/a*" { capabilities = ["read"] }\npath "+/ab*" { capabilities = ["list"] }\npath "+/b*" { capabilities = ["update"] }',
  'path "a+/+" { capabilities = ["read"] }\npath "a/+" { capabilities = ["list"] }',
  // Parameter decisions: numbers never match, booleans and objects by value, lists and comma strings element-wise.
  'path "a" { capabilities = ["update"]\n allowed_parameters = { x = [1, true, "v*"], key = [], y = ["w", "*v"] }\n denied_parameters = { key = ["b"] } }',
  '{"path": {"a": {"capabilities": ["update"], "allowed_parameters": {"x": [{"k": "v"}, "zz", ""], "*": []}, "denied_parameters": {"y": ["w"], "key": ["v*"]}}}}',
  'path "a" { capabilities = ["update"]\n required_parameters = ["X"]\n allowed_parameters = { "*" = [] } }',
  'path "a" { capabilities = ["update"]\n denied_parameters = { x = [1, ["v"]], "*" = ["zz"] } }',
  'path "a" { capabilities = ["update"]\n allowed_parameters = { x = ["v", "zz"], key = ["a", "b"], é = ["é"], a-b = ["A"] } }',
  // Templated paths (Vault fills them per entity; refused here) and unbalanced ones (refused by Vault).
  'path "secret/{{identity.entity.id}}/*" { capabilities = ["read"] }',
  'path "secret/{{identity.entity.id}/*" { capabilities = ["read"] }',
  'path "secret/}}/*" { capabilities = ["read"] }',
  // From Vault's vault/acl_test.go: a malformed policy, and segment wildcards at the front, the end and around a glob.
  'name{}',
  // Unicode as Go sees it (issue 23 §6): simple case mapping of names ("İd" is id, a final Σ is σ), Go's space set
  // in comma-separated values, surrogate escapes (JSON: refused by Go's strconv.Unquote; HCL: U+FFFD), a leading
  // U+FEFF kept, the Kelvin sign, parameter names with a * (refused here), policies values lower-cased.
  'path "a" { capabilities = ["update"]\n denied_parameters = { "İd" = [] "ΟΔΟΣ" = [] "\u212aey" = ["a"] } }',
  'path "a" { capabilities = ["update"]\n denied_parameters = { "key" = ["admin"] }\n allowed_parameters = { "*" = [] "x" = ["v", "reader"] } }',
  'path "a" { capabilities = ["update"]\n denied_parameters = { "token_policies" = ["root", "admin*"] "policies" = ["root"] } }',
  'path "a" { capabilities = ["update"]\n allowed_parameters = { "policies" = ["app-*"] "x" = [] } }',
  'path "a" { capabilities = ["update"]\n required_parameters = ["İd"] }',
  'path "a" { capabilities = ["update"]\n required_parameters = ["x*"] }',
  'path "a" { capabilities = ["update"]\n denied_parameters = { "*x" = ["a"] } }',
  '{"path": {"a/\\ud83d\\udd11": {"capabilities": ["read"]}}}',
  '{"path": {"a": {"capabilities": ["update"], "denied_parameters": {"x": ["\\udd11"]}}}}',
  '{"path": {"a": {"capabilities": ["re\\u0061d"]}, "b\\U0000D800": {"capabilities": ["read"]}}}',
  'path "a/\\ud83d\\udd11" { capabilities = ["read"] }\npath "a/*" { capabilities = ["deny"] }',
  'path "\\ufeffa/*" { capabilities = ["read"] }',
  '{"path": {"\\ufeffa/*": {"capabilities": ["read"]}}}',
  'path "a" { "capabİlities" = ["read"] }',
  'path "a" { \u212a = ["read"] capabilities = ["read"] }',
  // The LIST rule of current vault/acl.go: a deny glob under a `+` or glob list grant covers the listed directory.
  'path "a/+" { capabilities = ["list"] }\npath "a/b/*" { capabilities = ["deny"] }',
  'path "a/*" { capabilities = ["list"] }\npath "a/b/*" { capabilities = ["deny"] }',
  'path "a/*" { capabilities = ["deny"] }\npath "a/+/ab" { capabilities = ["list"] }',
  'path "a/+" { capabilities = ["read"] }\npath "a/b/*" { capabilities = ["list"] }\npath "a/b*" { capabilities = ["deny"] }',
  'path "test/+/segment" { capabilities = ["read"] }\npath "+/segment/at/front" { capabilities = ["read"] }\npath "test/segment/at/end/+" { capabilities = ["read"] }\npath "test/segment/at/end/v2/+/" { capabilities = ["read"] }\npath "test/+/wildcard/+/*" { capabilities = ["read"] }\npath "test/+/wildcardglob/+/end*" { capabilities = ["read"] }\npath "1/2/*" { capabilities = ["create"] }\npath "1/2/+" { capabilities = ["read"] }\npath "1/2/+/+" { capabilities = ["update", "recover"] }',
];

const segment = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('a', 'b', '+', 'ab') },
  { weight: 2, arbitrary: fc.constantFrom('secret', 'data', '*', 'a*', '+b', 'x+y', '', 'é', 'c.d', 'a-b') },
);
const pathArb = fc
  .tuple(fc.boolean(), fc.array(segment, { minLength: 1, maxLength: 4 }), fc.constantFrom('', '', '*', '/*', '/'))
  .map(([slash, parts, tail]) => `${slash ? '/' : ''}${parts.join('/')}${tail}`);

const capability = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.constantFrom('create', 'read', 'update', 'patch', 'delete', 'list', 'sudo', 'deny', 'subscribe'),
  },
  { weight: 1, arbitrary: fc.constantFrom('Read', 'raed', 'root') },
);
const legacy = fc.constantFrom('read', 'write', 'sudo', 'deny', 'admin', '');
const paramName = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('x', 'X', 'y', 'foo*', '*', 'Key', 'key', '__proto__', 'a-b', 'é') },
  // Names whose Go and JavaScript lower-casings differ, or that Vault lower-cases the values of.
  { weight: 1, arbitrary: fc.constantFrom('İd', 'id', 'ΟΔΟΣ', 'οδοσ', '\u212aey', 'ſ', 'token_policies', 'Policies') },
);
const scalar = fc.oneof(
  fc.constantFrom('"v"', '"v*"', '"*v"', '"*"', '"a,b"', '""', '"\\u00e9"', '"\\x41"'),
  fc.constantFrom('"\\ud83d\\udd11"', '"\\ufeffv"', '"v\\u0085"', '"\u00a0zz"', '"ROOT"', '"root"', '"\u2028v"'),
  fc.constantFrom('1', '0x1F', '010', '1.5', '-3', 'true', 'false', '1e3', '.5'),
);

interface RuleSpec {
  path: string;
  attributes: Array<[string, string]>;
}

/** An HCL value text for a parameter-values list (sometimes not a list, sometimes with nesting). */
const hclValues = fc.oneof(
  { weight: 6, arbitrary: fc.array(scalar, { maxLength: 3 }).map((items) => `[${items.join(', ')}]`) },
  { weight: 1, arbitrary: fc.constantFrom('"v"', '{}', '[["v"]]', '[{ k = "v" }]', '[]') },
);
const hclParamMap = fc
  .array(fc.tuple(paramName, fc.boolean(), hclValues), { maxLength: 3 })
  .map(
    (entries) =>
      `{ ${entries.map(([name, quoted, values]) => `${quoted || !/^[A-Za-z_][\w-]*$/.test(name) ? q(name) : name} = ${values}`).join('\n')} }`,
  );

const hclAttribute: fc.Arbitrary<[string, string]> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .array(capability, { maxLength: 3 })
      .map((caps): [string, string] => ['capabilities', `[${caps.map(q).join(', ')}]`]),
  },
  { weight: 1, arbitrary: legacy.map((p): [string, string] => ['policy', q(p)]) },
  { weight: 2, arbitrary: hclParamMap.map((m): [string, string] => ['allowed_parameters', m]) },
  { weight: 2, arbitrary: hclParamMap.map((m): [string, string] => ['denied_parameters', m]) },
  {
    weight: 1,
    arbitrary: fc
      .array(paramName, { maxLength: 2 })
      .map((names): [string, string] => ['required_parameters', `[${names.map(q).join(', ')}]`]),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<[string, string]>(
      ['comment', '"c"'],
      ['mfa_methods', '["m"]'],
      ['unknown', '1'],
      ['capabilities', '"read"'],
    ),
  },
);

/** Attributes of a path block: usually each key once, sometimes a key repeated (a duplicate). */
const attributesOf = (attribute: fc.Arbitrary<[string, string]>) =>
  fc.oneof(
    { weight: 5, arbitrary: fc.uniqueArray(attribute, { minLength: 1, maxLength: 4, selector: ([key]) => key }) },
    { weight: 1, arbitrary: fc.array(attribute, { minLength: 1, maxLength: 4 }) },
  );

function hclText(rules: RuleSpec[], style: { blockParams: boolean; commas: boolean; comments: boolean }): string {
  return rules
    .map((rule) => {
      const body = rule.attributes
        .map(([key, value]) =>
          style.blockParams && key.endsWith('_parameters') && value.startsWith('{')
            ? `${key} ${value}`
            : `${key} = ${value}`,
        )
        .join(style.comments ? ' # note\n  ' : '\n  ');
      return `path ${q(rule.path)} {\n  ${body}\n}${style.commas ? ',' : ''}`;
    })
    .join('\n');
}

/** A JSON value for a parameter-values list: JSON literals (with booleans and nulls Vault's parser treats specially). */
const jsonScalar = fc.constantFrom(
  '"v"',
  '"v*"',
  '"*"',
  '1',
  '1.5',
  'true',
  'false',
  'null',
  '"a,b"',
  '[]',
  '{"k": "v"}',
  '"\\ud83d"',
  '"\\ufeffv"',
  '"root"',
);
const jsonValues = fc.oneof(
  { weight: 6, arbitrary: fc.array(jsonScalar, { maxLength: 3 }).map((items) => `[${items.join(', ')}]`) },
  { weight: 1, arbitrary: fc.constantFrom('"v"', '{}', 'null', '[["v"]]') },
);
const jsonParamMap = fc
  .array(fc.tuple(paramName, jsonValues), { maxLength: 3 })
  .map((entries) => `{${entries.map(([name, values]) => `${q(name)}: ${values}`).join(', ')}}`);
const jsonAttribute: fc.Arbitrary<[string, string]> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .array(capability, { maxLength: 3 })
      .map((caps): [string, string] => ['capabilities', JSON.stringify(caps)]),
  },
  { weight: 1, arbitrary: legacy.map((p): [string, string] => ['policy', q(p)]) },
  { weight: 2, arbitrary: jsonParamMap.map((m): [string, string] => ['allowed_parameters', m]) },
  { weight: 2, arbitrary: jsonParamMap.map((m): [string, string] => ['denied_parameters', m]) },
  {
    weight: 1,
    arbitrary: fc
      .array(paramName, { maxLength: 2 })
      .map((names): [string, string] => ['required_parameters', JSON.stringify(names)]),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<[string, string]>(
      ['comment', '"c"'],
      ['capabilities', '"read"'],
      ['capabilities', 'null'],
      ['capabilities', '[true, "read"]'],
    ),
  },
);

function jsonText(rules: RuleSpec[], asList: boolean, trailingComma: boolean): string {
  const members = rules.map(
    (rule) =>
      `${q(rule.path)}: {${rule.attributes.map(([key, value]) => `${q(key)}: ${value}`).join(', ')}${trailingComma ? ',' : ''}}`,
  );
  return asList
    ? `{"path": [${members.map((member) => `{${member}}`).join(', ')}]}`
    : `{"path": {${members.join(', ')}}}`;
}

const hclPolicy = fc
  .tuple(
    fc.array(fc.record({ path: pathArb, attributes: attributesOf(hclAttribute) }), { minLength: 1, maxLength: 4 }),
    fc.record({ blockParams: fc.boolean(), commas: fc.boolean(), comments: fc.boolean() }),
  )
  .map(([rules, style]) => hclText(rules, style));

const jsonPolicy = fc
  .tuple(
    fc.array(fc.record({ path: pathArb, attributes: attributesOf(jsonAttribute) }), { minLength: 1, maxLength: 3 }),
    fc.boolean(),
    fc.boolean(),
  )
  .map(([rules, asList, trailingComma]) => jsonText(rules, asList, trailingComma));

/** The generated corpus: `count` policies, the same ones for the same seed. */
export function generatedCases(count: number, seed: number): string[] {
  return fc.sample(fc.oneof({ weight: 3, arbitrary: hclPolicy }, { weight: 2, arbitrary: jsonPolicy }), {
    numRuns: count,
    seed,
  });
}

/** Paths to ask about for a policy: each pattern's own path and neighbours of it, with and without a trailing slash. */
export function pathsFor(text: string): string[] {
  const patterns = [...text.matchAll(/"((?:[^"\\]|\\.)*)"\s*(?::\s*\{|\{)/g)].map((match) => match[1] as string);
  const paths = new Set<string>([
    'a',
    'b',
    'ab',
    'a/',
    'a/b',
    'a/ab',
    'b/a',
    'a/b/',
    'a/b/a',
    'a/ab/b',
    'b/b/b/',
    'secret/a',
  ]);
  for (const raw of patterns) {
    const pattern = raw.replace(/^\//, '');
    const concrete = pattern.replaceAll('+', 'seg').replace(/\*$/, '');
    for (const path of [
      pattern,
      concrete,
      `${concrete}x`,
      `${concrete}/x/y`,
      `${concrete}/`,
      concrete.split('/').slice(0, -1).join('/'),
    ]) {
      paths.add(path);
    }
  }
  return [...paths].slice(0, 20);
}

/** Nomad ACL policies: the cases ours used to get wrong, and Nomad's grammar corners. */
export const nomadFixedCases: string[] = [
  '',
  '# only a comment',
  'namespace "default" {\n  policy = "read"\n}\nnode {\n  policy = "read"\n}',
  'namespace "default" { policy = "deny"\n policy = "write" }',
  'namespace "default" { capabilities = ["deny"]\n capabilities = ["submit-job"] }',
  'namespace "default" { policy = "write" }',
  'namespace "default" { policy = "scale" }',
  'namespace "default" { capabilities = ["host-volume-write"] }',
  'namespace "default" { capabilities = ["register-job", "plan-job"] }',
  'namespace "default" { policy = "read" }\nnamespace "default" { capabilities = ["submit-job"] }',
  'namespace "a b" { policy = "read" }',
  'namespace { policy = "read" }',
  'namespace "a" "b" { policy = "read" }',
  'namespace "prod-*" { policy = "read" frobnicate = true }',
  'Namespace "default" { policy = "read" }',
  'agent "x" { policy = "read" }',
  'agent { policy = "scale" }',
  'agent = { policy = "write" }',
  'operator { capabilities = ["snapshot-save"] }',
  'operator { policy = "write" }',
  'plugin { policy = "list" }',
  'quota { policy = "read" }',
  'sentinel { policy = "read" }',
  'node_pool "prod_1" { policy = "write" capabilities = ["delete"] }',
  'host_volume "data" { policy = "read" capabilities = ["mount-readwrite"] }',
  'host_volume "da_ta" { policy = "read" }',
  'variables { }',
  'namespace "default" { policy = "read" } foo { }',
  '{"namespace": {"*": {"policy": "read", "capabilities": ["submit-job"]}}}',
  '{"namespace": {"default": {"policy": "deny"}, "default": {"policy": "write"}}}',
  '{"agent": {"policy": "read"}, "node": {"policy": "write"}}',
  '{"namespace": {"default": {"policy": "read"}}, "foo": 1}',
  'namespace "default" { policy = "read" capabilities = ["fly"] }',
  'node { policy = "list" }',
  // Repeats Nomad merges and ours refuses: quoted and unquoted, JSON members, a rule given twice in any form.
  'namespace "default" { policy = "deny"\n "policy" = "write" }',
  '{"namespace": {"default": {"policy": "deny", "policy": "write"}}}',
  '{"namespace": [{"default": {"policy": "deny"}}, {"default": {"policy": "write"}}]}',
  'node { policy = "deny" }\nnode { policy = "write" }',
  'Namespace "x" { policy = "deny" }\nnamespace "x" { policy = "write" }',
  '{"agent": {"policy": "deny"}, "agent": {"policy": "write"}}',
];

const nomadName = fc.constantFrom('default', 'prod-*', '*', 'a b', 'team_1', 'x');
const nomadNamespaceCapability = fc.constantFrom(
  'deny',
  'read-job',
  'submit-job',
  'list-jobs',
  'host-volume-write',
  'host-volume-create',
  'scale-job',
  'register-job',
  'fly',
);
const nomadPolicy = fc.constantFrom('read', 'write', 'deny', 'scale', 'list', '');
const nomadBody = fc
  .tuple(
    fc.option(nomadPolicy, { nil: undefined }),
    fc.option(fc.array(nomadNamespaceCapability, { maxLength: 3 }), { nil: undefined }),
    fc.boolean(),
  )
  .map(([policy, capabilities, repeat]) =>
    [
      ...(policy !== undefined ? [`policy = ${q(policy)}`] : []),
      ...(capabilities ? [`capabilities = ${JSON.stringify(capabilities)}`] : []),
      ...(repeat && policy !== undefined ? [`policy = ${q('write')}`] : []),
    ].join('\n  '),
  );
const nomadBlock = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.tuple(nomadName, nomadBody).map(([name, body]) => `namespace ${q(name)} {\n  ${body}\n}`),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.constantFrom('node', 'agent', 'operator', 'quota', 'plugin'), nomadPolicy)
      .map(([kind, policy]) => `${kind} { policy = ${q(policy)} }`),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('node_pool', 'host_volume'), nomadName, nomadPolicy)
      .map(([kind, name, policy]) => `${kind} ${q(name)} { policy = ${q(policy)} }`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'agent "x" { policy = "read" }',
      'foo { }',
      'namespace { policy = "read" }',
      'node { policy = "read" }, ',
    ),
  },
);

/** Generated Nomad policies (HCL; a third also written as JSON). */
export function generatedNomadCases(count: number, seed: number): string[] {
  return fc.sample(
    fc.array(nomadBlock, { minLength: 1, maxLength: 4 }).map((blocks) => blocks.join('\n')),
    { numRuns: count, seed },
  );
}

/** Request bodies for update checks: the names and values the generated parameter constraints use. */
export const writeBodies: Array<Record<string, unknown>> = [
  {},
  { x: 'v' },
  { x: 'zz' },
  { X: 'v', y: 'w' },
  { key: 'a,b' },
  { key: 'v, zz', x: 'a' },
  { x: ['v', 'zz'] },
  { x: ['v'], key: ['a', 'b'] },
  { x: 1 },
  { y: 1.5, key: -3 },
  { x: true },
  { key: false, y: 'v*' },
  { 'foo*': 'v', '*': 'v' },
  { é: 'é', 'a-b': 'A' },
  { x: '' },
  // Unicode as Go sees it: a Go-lower-cased name, Go's space set around comma-separated values, policies values.
  { İD: 'v', ΟΔΟΣ: 'a' },
  { key: 'b,admin\u0085', x: '\ufeffreader' },
  { x: 'v,\u00a0zz\u3000', y: 'w\u200b' },
  { token_policies: 'default,ROOT', policies: ['App-1'] },
  { Token_Policies: ['Admin-x'], key: 'A' },
  { kEY: 'a' },
  JSON.parse('{"__proto__": "v"}'),
  { x: { k: 'v' } },
  { key: 'v*', y: '*v' },
];

/** Paths a policy's rules decide, for update checks: each pattern made concrete (`+` a segment, `*` a suffix). */
export function writePathsFor(text: string): string[] {
  const patterns = [...text.matchAll(/"((?:[^"\\]|\\.)*)"\s*(?::\s*\{|\{)/g)].map((match) =>
    (match[1] as string).replace(/^\//, ''),
  );
  return [...new Set([...patterns.map((pattern) => pattern.replaceAll('+', 'seg').replace(/\*$/, 'x')), 'a'])].slice(
    0,
    4,
  );
}
