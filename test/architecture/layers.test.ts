import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsOf } from './imports.ts';

/**
 * The import graph of every .ts (and generated .js) file under packages/ and functions/ (tests excluded; `import type`, `export … from`
 * and `import()` count): every arrow points down the layer table below or stays in its layer, and no two files
 * import each other, directly or round a cycle.
 *
 * THE LAYERS, highest first. A file may import a file of its own layer or of a lower one (a smaller number).
 * The first rule whose prefix a file's path (from the repository root) starts with gives its layer.
 *
 *  7 functions           functions/**                                 Lambda handlers
 *  6 adapters            packages/core/src/http/**, packages/local/**  both services' adapters (API Gateway and the
 *                        streaming Lambda, node:http, in process), the secrets front; the local server and poller
 *    entry points        packages/core/src/{index,item-kinds}.ts, packages/core/src/entry-points/**
 *                        (what a Lambda or the local process calls: they build a Core from the environment or run a
 *                        job over the whole process, reaching engines and the scheduler, so they sit with the adapters)
 *    assembly            composition/secrets-core.ts: the composition root of the secrets service — it builds the domain services over the
 *                        store, binds the builtin backends to them and hands the lease manager the backends' hooks.
 *                        The framework, the backends and the jobs know the parts as `Core` (secrets/framework/services.ts),
 *                        a type, never this file.
 *    scheduler app       scheduler/composition/scheduler-app.ts (the route table and the scheduler's front)
 *  5 backends            secrets/{engines,auth,sys,identity-paths}/**, secrets/{families,family-list}.ts (the path tables)
 *    scheduler routes    scheduler/{acl,cluster}/<resource>/routes.ts, scheduler/acl/login-routes.ts, scheduler/events/stream.ts,
 *                        scheduler/client/routes.ts (the client protocol)
 *  4 framework           secrets/framework/**
 *    scheduler framework scheduler/http/** (the one route wrapper, decoding, blocking queries, errors), scheduler/audit.ts
 *  3 scheduler assembly  scheduler/composition/{scheduler-core,secret-hashes}.ts, scheduler/sweep.ts, scheduler/acl/login.ts, scheduler/acl/oidc.ts,
 *                        scheduler/worker/** (the stores put together, and what works across them: the expiry sweep,
 *                        the logins, the evaluation worker over the stores and placement)
 *    scheduler placement scheduler/placement/** (the pure placement function and the reconciler: a snapshot of
 *                        models in, a decision out; they import only the cluster's models and lib)
 *  2 domain              secrets/{tokens,leases,mounts,policies,audit,identity}/**
 *    scheduler acl       scheduler/acl/** (each resource's model and store, the policy rules, name rules)
 *    scheduler cluster   scheduler/cluster/** (each cluster resource's model and store: node pools, namespaces, nodes),
 *                        scheduler/client/** (the node introduction tokens and identities)
 *  1 storage             storage/**
 *    shared core         composition/shared-core.ts (the table, its keyring, the clock and the log: what both services run on)
 *    shared front        front/** (what both services' fronts share: the request and reply every adapter hands
 *                        over, the body limit, DynamoDB's size refusals as errors, write forwarding, the OpenAPI
 *                        document's skeleton)
 *    scheduler state     scheduler/state.ts, scheduler/keys.ts, scheduler/beat-marks.ts, scheduler/events/broker.ts
 *                        (the index-guarded commit, the table's keys, the beat marks every commit moves)
 *  0 lib                 lib/**
 *    console             packages/ui/** (the web console: a client of the two public APIs, it imports nothing of
 *                        the services; `packages/local` serves it)
 *    agent               packages/agent/** (the cluster's client agent and the simulated fleet: they speak only the
 *                        documented client protocol over HTTP and import nothing of the services)
 */
const src = 'packages/core/src/';
const sched = `${src}scheduler/`;
const layers: Array<{ rank: number; name: string; prefixes: Array<string | RegExp> }> = [
  { rank: 7, name: 'functions', prefixes: ['functions/'] },
  { rank: 6, name: 'adapters', prefixes: [`${src}http/`, 'packages/local/'] },
  {
    rank: 6,
    name: 'entry points',
    prefixes: [`${src}index.ts`, `${src}item-kinds.ts`, `${src}entry-points/`],
  },
  { rank: 6, name: 'assembly', prefixes: [`${src}composition/secrets-core.ts`] },
  { rank: 6, name: 'scheduler app', prefixes: [`${sched}composition/scheduler-app.ts`] },
  {
    rank: 5,
    name: 'backends',
    prefixes: [
      `${src}secrets/engines/`,
      `${src}secrets/auth/`,
      `${src}secrets/sys/`,
      `${src}secrets/identity-paths/`,
      `${src}secrets/families.ts`,
      `${src}secrets/family-list.ts`,
    ],
  },
  {
    rank: 5,
    name: 'scheduler routes',
    prefixes: [
      /^packages\/core\/src\/scheduler\/(acl|cluster)\/[^/]+\/routes\.ts$/,
      `${sched}acl/login-routes.ts`,
      `${sched}events/stream.ts`,
      `${sched}client/routes.ts`,
    ],
  },
  { rank: 4, name: 'framework', prefixes: [`${src}secrets/framework/`] },
  { rank: 4, name: 'scheduler framework', prefixes: [`${sched}http/`, `${sched}audit.ts`] },
  {
    rank: 3,
    name: 'scheduler assembly',
    prefixes: [
      `${sched}composition/scheduler-core.ts`,
      `${sched}composition/secret-hashes.ts`,
      `${sched}sweep.ts`,
      `${sched}acl/login.ts`,
      `${sched}acl/oidc.ts`,
      `${sched}worker/`,
    ],
  },
  { rank: 3, name: 'scheduler placement', prefixes: [`${sched}placement/`] },
  {
    rank: 2,
    name: 'domain',
    prefixes: ['tokens', 'leases', 'mounts', 'policies', 'audit', 'identity'].map(
      (folder) => `${src}secrets/${folder}/`,
    ),
  },
  { rank: 2, name: 'scheduler acl', prefixes: [`${sched}acl/`] },
  { rank: 2, name: 'scheduler cluster', prefixes: [`${sched}cluster/`, `${sched}client/`] },
  { rank: 1, name: 'storage', prefixes: [`${src}storage/`] },
  { rank: 1, name: 'shared core', prefixes: [`${src}composition/shared-core.ts`] },
  { rank: 1, name: 'shared front', prefixes: [`${src}front/`] },
  {
    rank: 1,
    name: 'scheduler state',
    prefixes: [`${sched}state.ts`, `${sched}keys.ts`, `${sched}beat-marks.ts`, `${sched}events/broker.ts`],
  },
  { rank: 0, name: 'lib', prefixes: [`${src}lib/`] },
  { rank: 0, name: 'console', prefixes: ['packages/ui/'] },
  { rank: 0, name: 'agent', prefixes: ['packages/agent/'] },
];

const root = path.resolve(import.meta.dirname, '../..');

function sourceFiles(folder: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(path.join(root, folder))) {
    if (entry === 'node_modules' || entry.startsWith('.')) continue;
    const relative = `${folder}/${entry}`;
    if (statSync(path.join(root, relative)).isDirectory()) found.push(...sourceFiles(relative));
    // Generated JavaScript (lib/bexpr-parser.js) is part of the graph too.
    else if (/\.(ts|tsx|js|mjs)$/.test(entry) && !/\.test\.ts$|\.d\.ts$/.test(entry)) found.push(relative);
  }
  return found;
}

const layerOf = (file: string) =>
  layers.find((layer) =>
    layer.prefixes.some((prefix) => (typeof prefix === 'string' ? file.startsWith(prefix) : prefix.test(file))),
  );

/** A specifier as a repository-relative file, for ours (relative, `@keyhaven/core[/…]`, `@keyhaven/local`); else undefined. */
function resolve(from: string, specifier: string): string | undefined {
  let target: string;
  if (specifier.startsWith('.')) target = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  else if (specifier === '@keyhaven/core') target = `${src}index.ts`;
  else if (specifier.startsWith('@keyhaven/core/')) target = `${src}${specifier.slice('@keyhaven/core/'.length)}`;
  else if (specifier === '@keyhaven/local') target = 'packages/local/src/index.ts';
  else if (specifier.startsWith('@keyhaven/ui/')) target = `packages/ui/${specifier.slice('@keyhaven/ui/'.length)}`;
  else if (specifier === '@keyhaven/agent') target = 'packages/agent/src/index.ts';
  else if (specifier.startsWith('@keyhaven/agent/'))
    target = `packages/agent/src/${specifier.slice('@keyhaven/agent/'.length)}`;
  else return undefined;
  const candidates = [target, target.replace(/\.js$/, '.ts'), `${target}.ts`, `${target}/index.ts`];
  return (
    candidates.find((candidate) => /\.(ts|tsx|js|mjs)$/.test(candidate) && existsSync(path.join(root, candidate))) ??
    target
  );
}

const files = [...sourceFiles('packages'), ...sourceFiles('functions')].sort();
const graph = new Map<string, string[]>(
  files.map((file) => {
    const specifiers = importsOf(readFileSync(path.join(root, file), 'utf8'));
    const targets = specifiers.map((specifier) => resolve(file, specifier)).filter((target) => target !== undefined);
    return [file, [...new Set(targets)].sort()];
  }),
);

/** Tarjan's strongly connected components; those with more than one file (or a file importing itself) are cycles. */
function cycles(edges: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!edges.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node) as number, index.get(next) as number));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (edges.get(node) ?? []).includes(node)) found.push(component.sort());
  };
  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** One shortest round trip inside a component, from its first file back to it, to show how the cycle closes. */
function roundTrip(component: string[]): string[] {
  const members = new Set(component);
  const start = component[0] as string;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift() as string;
    for (const next of graph.get(node) ?? []) {
      if (!members.has(next)) continue;
      if (next === start) {
        const trip = [start];
        for (let at: string | undefined = node; at !== undefined && at !== start; at = previous.get(at))
          trip.splice(1, 0, at);
        return [...trip, start];
      }
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return [start, start];
}

const short = (file: string) => file.replace(src, '');

describe('the import graph', () => {
  it('reads the imports a file makes, and nothing in its comments, strings, templates or regular expressions', () => {
    const text = [
      "import type { A } from './a.ts';",
      "import './side-effect.ts';",
      "export * from '../b.ts';",
      "export { c } from '@keyhaven/core/c.ts';",
      'export { d };',
      "export type { E } from './e.ts';",
      "// import { no } from './comment.ts';",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal, scanned as such
      "const text = `import { no } from './template.ts' ${value} and ${`import('./nested.ts')`}`;",
      "const pattern = /from '.\\/regex.ts'/;",
      "const later = await import('./dynamic.ts');",
      'console.log(import.meta.url);',
    ].join('\n');
    expect(importsOf(text)).toEqual([
      './a.ts',
      './side-effect.ts',
      '../b.ts',
      '@keyhaven/core/c.ts',
      './e.ts',
      './dynamic.ts',
    ]);
  });

  it('gives every file a layer and resolves every import of ours to a file', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files.filter((file) => !layerOf(file))).toEqual([]);
    const dangling = [...graph].flatMap(([file, targets]) =>
      targets.filter((target) => !graph.has(target)).map((target) => `${file} → ${target}`),
    );
    expect(dangling).toEqual([]);
  });

  it('keeps the console a client only: nothing in packages/ui imports the services', () => {
    const reaching = [...graph]
      .filter(([file]) => file.startsWith('packages/ui/'))
      .flatMap(([file, targets]) =>
        targets.filter((target) => !target.startsWith('packages/ui/')).map((target) => `${file} → ${target}`),
      );
    expect(reaching).toEqual([]);
    expect([...graph.keys()].filter((file) => file.startsWith('packages/ui/src/')).length).toBeGreaterThan(5);
  });

  it('keeps the agent a client of the protocol only: nothing in packages/agent imports the services', () => {
    const agentFiles = [...graph.keys()].filter((file) => file.startsWith('packages/agent/'));
    const reaching = agentFiles.flatMap((file) =>
      (graph.get(file) ?? [])
        .filter((target) => !target.startsWith('packages/agent/'))
        .map((target) => `${file} → ${target}`),
    );
    expect(reaching).toEqual([]);
    expect(agentFiles.length).toBeGreaterThan(5);
  });

  it('has no arrow pointing up the layers', () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      const from = layerOf(file);
      for (const target of targets) {
        const to = layerOf(target);
        if (from && to && to.rank > from.rank)
          upward.push(`${short(file)} (${from.name}) → ${short(target)} (${to.name})`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('has no import cycle', () => {
    const found = cycles(graph).map(
      (component) =>
        `${component.length} files: ${roundTrip(component).map(short).join(' → ')}${
          component.length > roundTrip(component).length - 1
            ? ` (also ${component
                .filter((file) => !roundTrip(component).includes(file))
                .map(short)
                .join(', ')})`
            : ''
        }`,
    );
    expect(found).toEqual([]);
  });
});
