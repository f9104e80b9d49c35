/**
 * The agent's settings, from Nomad's agent flags (`-data-dir DIR`, `-servers a,b`, `-client-intro-token T`, `-node`,
 * `-dc`, `-node-pool`, `-node-class`, `-meta k=v`, `-network-interface`, `-config FILE`), Nomad's environment variable
 * for the introduction token (`NOMAD_CLIENT_INTRO_TOKEN`, which wins over the flag, as in Nomad) and an optional JSON
 * configuration file in Nomad's agent-configuration names (`data_dir`, `name`, `datacenter`, `ports.http`,
 * `client.{servers,node_pool,node_class,meta,network_interface}`, `plugin.raw_exec.config.enabled`). A flag wins over
 * the file. Like Nomad, the introduction token cannot be set in the file.
 */
import { readFileSync } from 'node:fs';
import * as z from 'zod/mini';
import type { NodeSettings } from './node.ts';

export interface AgentConfig {
  dataDir: string;
  servers: string[];
  introToken?: string;
  node: NodeSettings;
  networkInterface?: string;
  rawExecEnabled: boolean;
}

export class ConfigError extends Error {}

export const usage = `Usage: npm run agent -- -data-dir DIR [options]

Starts a Keyhaven client agent: fingerprints this machine, registers it as a node of the scheduler service and
keeps it alive with heartbeats. Stop it with Ctrl-C (the node stays registered, as Nomad's does).

  -data-dir DIR              where the node's ID and secret are kept (required)
  -servers LIST              scheduler service addresses, comma-separated (default http://127.0.0.1:4646)
  -client-intro-token JWT    introduction token for a new node (or NOMAD_CLIENT_INTRO_TOKEN,
                             or the file DIR/client/intro_token.jwt)
  -node NAME                 node name (default: the host name)
  -dc NAME                   datacenter (default dc1)
  -node-pool NAME            node pool (default default)
  -node-class NAME           node class (default none)
  -meta KEY=VALUE            node metadata (repeatable)
  -network-interface NAME    interface whose address the node advertises (default: the default route's)
  -config FILE               a JSON agent configuration (plugin.raw_exec.config.enabled = true enables raw_exec)
`;

const configFile = z.object({
  data_dir: z.optional(z.string()),
  name: z.optional(z.string()),
  datacenter: z.optional(z.string()),
  ports: z.optional(z.object({ http: z.optional(z.number()) })),
  client: z.optional(
    z.object({
      enabled: z.optional(z.boolean()),
      servers: z.optional(z.array(z.string())),
      node_pool: z.optional(z.string()),
      node_class: z.optional(z.string()),
      meta: z.optional(z.record(z.string(), z.string())),
      network_interface: z.optional(z.string()),
    }),
  ),
  plugin: z.optional(
    z.object({
      raw_exec: z.optional(z.object({ config: z.optional(z.object({ enabled: z.optional(z.boolean()) })) })),
    }),
  ),
});

const valueFlags = new Set([
  'data-dir',
  'servers',
  'client-intro-token',
  'node',
  'dc',
  'node-pool',
  'node-class',
  'meta',
  'network-interface',
  'config',
]);

/** Nomad-style flags: `-name value`, `-name=value`, `--name` alike; `-meta` repeats. */
export function parseFlags(argv: string[]): { values: Map<string, string>; meta: string[]; help: boolean } {
  const values = new Map<string, string>();
  const meta: string[] = [];
  let help = false;
  for (let position = 0; position < argv.length; position++) {
    const argument = argv[position] as string;
    const match = /^--?([a-z-]+)(?:=(.*))?$/s.exec(argument);
    if (!match) throw new ConfigError(`unexpected argument "${argument}" (flags start with -)`);
    const name = match[1] as string;
    if (name === 'help' || name === 'h') {
      help = true;
      continue;
    }
    if (!valueFlags.has(name)) throw new ConfigError(`unknown flag -${name}`);
    let value = match[2];
    if (value === undefined) {
      value = argv[++position];
      if (value === undefined) throw new ConfigError(`flag -${name} needs a value`);
    }
    if (name === 'meta') meta.push(value);
    else values.set(name, value);
  }
  return { values, meta, help };
}

function readConfigFile(file: string): z.infer<typeof configFile> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read -config ${file}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`-config ${file} is not JSON: ${(error as Error).message}`);
  }
  const parsed = configFile.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`-config ${file}: ${issue?.path.join('.') || '(top level)'}: ${issue?.message}`);
  }
  return parsed.data;
}

function metaPair(text: string): [string, string] {
  const at = text.indexOf('=');
  if (at <= 0) throw new ConfigError(`-meta "${text}" is not KEY=VALUE`);
  return [text.slice(0, at), text.slice(at + 1)];
}

/** The settings from the command line and the environment; `help` when the user asked for the usage text. */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv): AgentConfig | 'help' {
  const flags = parseFlags(argv);
  if (flags.help) return 'help';
  const file = flags.values.has('config') ? readConfigFile(flags.values.get('config') as string) : {};
  const dataDir = flags.values.get('data-dir') ?? file.data_dir;
  if (!dataDir) throw new ConfigError('-data-dir is required (where the node keeps its ID and secret)');
  const servers = (flags.values.get('servers')?.split(',') ?? file.client?.servers ?? ['http://127.0.0.1:4646'])
    .map((server) => server.trim())
    .filter(Boolean);
  if (servers.length === 0) throw new ConfigError('-servers names no server');
  const httpPort = file.ports?.http ?? 4646;
  if (!Number.isInteger(httpPort) || httpPort < 1 || httpPort > 65_535)
    throw new ConfigError(`ports.http must be a port number, not ${httpPort}`);
  const introToken = env.NOMAD_CLIENT_INTRO_TOKEN || flags.values.get('client-intro-token') || undefined;
  const networkInterface = flags.values.get('network-interface') ?? file.client?.network_interface;
  const name = flags.values.get('node') ?? file.name;
  return {
    dataDir,
    servers,
    ...(introToken ? { introToken } : {}),
    ...(networkInterface ? { networkInterface } : {}),
    rawExecEnabled: file.plugin?.raw_exec?.config?.enabled ?? false,
    node: {
      ...(name ? { name } : {}),
      datacenter: flags.values.get('dc') ?? file.datacenter ?? 'dc1',
      nodePool: flags.values.get('node-pool') ?? file.client?.node_pool ?? 'default',
      nodeClass: flags.values.get('node-class') ?? file.client?.node_class ?? '',
      meta: { ...(file.client?.meta ?? {}), ...Object.fromEntries(flags.meta.map(metaPair)) },
      httpPort,
    },
  };
}
