import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  freePort,
  killLeftovers,
  portIsFree,
  repo,
  START_TIMEOUT_MS,
  type Started,
  start,
} from '../support/npm-start.ts';
import { signalGroup } from '../../packages/agent/src/runner/executor.ts';
import { AllocStateStore } from '../../packages/agent/src/runner/state-store.ts';
import { baseDn, managerDn, type Slapd, startSlapd } from '../support/slapd.ts';
import { matchesShown, type ShBlock, type ShCommand, shBlocks } from './readme-script.ts';

/**
 * Every ```sh block of README.md and of the docs beside it (docs/*.md: the API references and the guides the README
 * links to), run as written with bash and curl against `npm start`, each answer held to what the doc shows: its
 * `# {…}` lines (with `…` for "anything") and `(HTTP 403)`; a command the doc shows no answer for must succeed (curl
 * exit 0, HTTP 2xx). So neither the README nor the docs can drift from the product.
 *
 * One bash runs them all in order, the README first and then docs/*.md by name, so a doc's example goes on from
 * the README's "Try it" shell (`VAULT_ADDR`, `ROOT`, the `app-reader` policy), as a reader's shell would.
 */

const run = promisify(execFile);
/** README.md, then docs/*.md by name: the order their blocks run in. */
const exampleDocs = [
  'README.md',
  ...(await readdir(path.join(repo, 'docs')))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];
const texts = await Promise.all(exampleDocs.map((doc) => readFile(path.join(repo, doc), 'utf8')));
const blocks = exampleDocs.flatMap((doc, index) => shBlocks(texts[index] as string, doc));
/** Every example doc's text, for the values the fixtures take from the examples (the directory's entries). */
const examples = texts.join('\n');

/**
 * The README's own addresses; the server (and slapd) are started on these ports when they are free, else on free
 * ports with these addresses rewritten.
 */
const readmeSecrets = 'http://127.0.0.1:8200';
const readmeScheduler = 'http://127.0.0.1:4646';
const readmeLdap = 'ldap://127.0.0.1:389';

/** Blocks the harness does itself rather than run twice: installing and starting the product, running the suite (the README's opening block). */
const harnessBlocks: Array<{ test: RegExp; reason: string }> = [
  {
    test: /^npm ci && npm start\b[^\n]*\nnpm ci && npm test\b/,
    reason: 'installing (node_modules is there) and starting: the harness starts `npm start`; `npm test` is this suite',
  },
  { test: /^KEYHAVEN_DEV_ROOT_TOKEN=(\S+) npm start$/, reason: 'the harness starts `npm start` with this environment' },
];

/**
 * The directory the docs' LDAP example talks to, from the example's own values: its manager entry (with the
 * example's bind password) and, under its `userdn`, the one entry its static role takes over, with a password
 * the engine must replace.
 */
function readmeDirectory(): {
  config: Record<string, string>;
  username: string;
  userDn: string;
  initialPassword: string;
  seed: string;
} {
  const config = JSON.parse(/\/v1\/ldap\/config \\\n\s*-d '([^']*)'/.exec(examples)?.[1] ?? 'null');
  const role = JSON.parse(/\/v1\/ldap\/static-role\/\S+ -d '([^']*)'/.exec(examples)?.[1] ?? 'null');
  if (!config || !role) throw new Error("no example configures ldap/config and a static role with -d '{…}' any more");
  const username = role.username as string;
  const userDn = `cn=${username},${config.userdn}`;
  const initialPassword = `${username}-initial`;
  const seed = [
    `dn: ${baseDn}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example`,
    `dn: ${config.binddn}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: manager\nuserPassword: ${config.bindpass}`,
    `dn: ${config.userdn}\nobjectClass: organizationalUnit\nou: ${/^ou=([^,]+)/.exec(config.userdn)?.[1]}`,
    `dn: ${userDn}\nobjectClass: inetOrgPerson\ncn: ${username}\nsn: ${username}\nuid: ${username}\nuserPassword: ${initialPassword}`,
  ].join('\n\n');
  return { config, username, userDn, initialPassword, seed: `${seed}\n` };
}

/** Commands that do not end on their own (a stream): cut after this many seconds, curl then exits 28. */
const streaming = [/\/v1\/event\/stream/];
const streamSeconds = 5;

/**
 * Commands the docs run "in a second shell" (the client agent): started from the repository in the background, in
 * a process group of their own, their output in a file; the next command waits (up to 60 s) for the line that says
 * the agent is up, and the script stops them at its end with SIGTERM, as Ctrl-C would.
 */
const background = [{ command: /^npm run agent\b/, ready: 'node status ready' }];
/** The agent's data directory in the README, rewritten to the run's own folder. */
const readmeAgentDir = '.keyhaven-agent';

interface Outcome {
  command: ShCommand;
  stdout: string;
  exitCode: number;
  httpStatuses: number[];
}

/**
 * One bash process runs every runnable block in order (variables carry over, as in a reader's shell). Each
 * command is framed by markers on stdout and stderr; curl reports each HTTP status on stderr through a
 * curlrc (`CURL_HOME`), so the commands' own output stays exactly what the doc shows.
 */
async function runBlocks(
  runnable: ShBlock[],
  rewrite: (text: string) => string,
  work: string,
): Promise<{ outcomes: Outcome[]; variables: Record<string, string> }> {
  const curlHome = path.join(work, 'curl');
  const streamHome = path.join(work, 'curl-stream');
  const curlrc = 'write-out = "%{stderr}@@HTTP %{http_code}@@"\nmax-time = 20\n';
  await run('mkdir', ['-p', curlHome, streamHome]);
  await writeFile(path.join(curlHome, '.curlrc'), curlrc);
  await writeFile(path.join(streamHome, '.curlrc'), curlrc.replace('max-time = 20', `max-time = ${streamSeconds}`));

  const commands = runnable.flatMap((block) => block.commands);
  const variables = [
    ...new Set(
      commands.flatMap((command) =>
        [...command.text.matchAll(/^([A-Z_][A-Z0-9_]*)=/gm)].map((match) => match[1] as string),
      ),
    ),
  ];
  const script: string[] = [];
  const backgrounded: string[] = [];
  for (const [index, command] of commands.entries()) {
    const stream = streaming.some((pattern) => pattern.test(command.text));
    const inBackground = background.find((entry) => entry.command.test(command.text));
    script.push(`printf '@@BEGIN ${index}@@'; printf '@@BEGIN ${index}@@' >&2`);
    if (stream) script.push(`export CURL_HOME=${streamHome}`);
    if (inBackground) {
      const log = path.join(work, `background-${index}.log`);
      const text = rewrite(command.text).replaceAll(readmeAgentDir, path.join(work, 'agent-data'));
      script.push(`setsid bash -c ${JSON.stringify(`cd ${repo} && exec ${text}`)} > ${log} 2>&1 < /dev/null &`);
      script.push(`__bg_${index}=$!`);
      script.push(
        `for __try in $(seq 1 600); do grep -q ${JSON.stringify(inBackground.ready)} ${log} && break; sleep 0.1; done; grep -q ${JSON.stringify(inBackground.ready)} ${log}`,
      );
      backgrounded.push(`__bg_${index}`);
    } else script.push(rewrite(command.text).replaceAll(readmeAgentDir, path.join(work, 'agent-data')));
    script.push(`__rc=$?; printf '@@END ${index} %d@@' "$__rc"`);
    if (stream) script.push(`export CURL_HOME=${curlHome}`);
  }
  for (const pid of backgrounded) script.push(`kill -TERM -- -$${pid} 2>/dev/null; wait $${pid} 2>/dev/null`);
  script.push(`printf '@@VARS@@'`);
  for (const name of variables) script.push(`printf '%s=%s\\n' ${name} "$${name}"`);
  const scriptFile = path.join(work, 'readme.sh');
  await writeFile(scriptFile, `${script.join('\n')}\n`);

  const { stdout, stderr } = await run('bash', [scriptFile], {
    cwd: work,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, CURL_HOME: curlHome, TMPDIR: work },
    timeout: 240_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  const [commandsOut, varsOut = ''] = stdout.split('@@VARS@@');
  const outcomes = commands.map((command, index) => {
    const framed = new RegExp(`@@BEGIN ${index}@@([\\s\\S]*?)@@END ${index} (\\d+)@@`).exec(commandsOut ?? '');
    if (!framed) throw new Error(`no output framed for ${command.file}:${command.line}:\n${stdout}\n${stderr}`);
    const errors = stderr.split(`@@BEGIN ${index}@@`)[1]?.split(/@@BEGIN \d+@@/)[0] ?? '';
    const httpStatuses = [...errors.matchAll(/@@HTTP (\d{3})@@/g)].map((match) => Number(match[1]));
    return { command, stdout: framed[1] as string, exitCode: Number(framed[2]), httpStatuses };
  });
  const values = Object.fromEntries(
    varsOut
      .split('\n')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  return { outcomes, variables: values };
}

function kindOf(block: ShBlock): 'harness' | 'run' {
  return harnessBlocks.some((entry) => entry.test.test(block.text)) ? 'harness' : 'run';
}

describe('the shell examples of README.md and docs/*.md, run as written against npm start', () => {
  let work: string;
  let started: Started;
  let outcomes: Outcome[];
  let variables: Record<string, string>;
  let rootToken: string;
  let slapd: Slapd;
  const directory = readmeDirectory();

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'keyhaven-readme-'));
    const startBlock = blocks.find((block) => /^KEYHAVEN_DEV_ROOT_TOKEN=(\S+) npm start$/.test(block.text));
    if (!startBlock) throw new Error('the README no longer starts the server with KEYHAVEN_DEV_ROOT_TOKEN=… npm start');
    rootToken = /^KEYHAVEN_DEV_ROOT_TOKEN=(\S+)/.exec(startBlock.text)?.[1] as string;

    // On the README's ports when they are free (the text then runs byte for byte); else on free ports, with the
    // README's two addresses rewritten to them.
    const onReadmePorts = (await portIsFree(8200)) && (await portIsFree(4646));
    const ports: Record<string, string> = onReadmePorts
      ? {}
      : { KEYHAVEN_SECRETS_PORT: String(await freePort()), KEYHAVEN_SCHEDULER_PORT: String(await freePort()) };
    // The README's directory on 389 when this runs as root and 389 is free, else on a free port.
    let ldapPort = process.getuid?.() === 0 && (await portIsFree(389)) ? 389 : undefined;
    [started, slapd] = await Promise.all([
      start({ KEYHAVEN_DATA_DIR: path.join(work, 'data'), KEYHAVEN_DEV_ROOT_TOKEN: rootToken, ...ports }),
      // 389 may be taken between the check and the start (another run): then a free port.
      startSlapd({ ...(ldapPort ? { port: ldapPort } : {}), seed: directory.seed }).catch((error) => {
        if (!ldapPort) throw error;
        ldapPort = undefined;
        return startSlapd({ seed: directory.seed });
      }),
    ]);
    const rewrite = (text: string) =>
      text
        .replaceAll(readmeSecrets, started.secrets)
        .replaceAll(readmeScheduler, started.scheduler)
        .replaceAll(readmeLdap, slapd.url);
    if (onReadmePorts) expect([started.secrets, started.scheduler]).toEqual([readmeSecrets, readmeScheduler]);
    if (ldapPort) expect(slapd.url).toBe(readmeLdap);

    ({ outcomes, variables } = await runBlocks(
      blocks.filter((block) => kindOf(block) === 'run'),
      rewrite,
      work,
    ));
  }, START_TIMEOUT_MS + 240_000);

  afterAll(async () => {
    killLeftovers();
    // The tasks the README's agent ran outlive it (as Nomad's do): end them.
    if (work)
      for (const saved of new AllocStateStore(path.join(work, 'agent-data')).loadAll().saved)
        for (const task of Object.values(saved.Tasks)) if (task.Handle) signalGroup(task.Handle, 'SIGKILL');
    await slapd?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  const outcomeOf = (pattern: RegExp): Outcome => {
    const found = outcomes.filter((outcome) => pattern.test(outcome.command.text));
    if (found.length !== 1) throw new Error(`expected one example command matching ${pattern}, found ${found.length}`);
    return found[0] as Outcome;
  };
  const jsonOf = (outcome: Outcome) => {
    try {
      return JSON.parse(outcome.stdout);
    } catch {
      throw new Error(
        `${outcome.command.file}:${outcome.command.line} printed no JSON: ${JSON.stringify(outcome.stdout)}`,
      );
    }
  };

  it('every block is run, or done by the harness (install, start): none is left out', async () => {
    // The README opens with the two commands, and the harness does them.
    expect(blocks[0]).toMatchObject({ file: 'README.md' });
    expect(harnessBlocks[0]?.test.test(blocks[0]?.text as string)).toBe(true);
    // No shell example lives in a Markdown file this test does not read.
    const markdown = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.md'], {
      cwd: repo,
      encoding: 'utf8',
    }).split('\n');
    const elsewhere = markdown.filter(
      (file) => file !== '' && !exampleDocs.includes(file) && !file.includes('node_modules/'),
    );
    const withExamples = await Promise.all(
      elsewhere.map(async (file) =>
        (await readFile(path.join(repo, file), 'utf8').catch(() => '')).includes('```sh') ? file : undefined,
      ),
    );
    expect(withExamples.filter(Boolean)).toEqual([]);
    const kinds = blocks.map(kindOf);
    expect(kinds.filter((kind) => kind === 'run').length).toBeGreaterThanOrEqual(2);
    expect(kinds.filter((kind) => kind === 'harness')).toHaveLength(harnessBlocks.length);
    expect(outcomes.length).toBe(
      blocks.filter((block) => kindOf(block) === 'run').flatMap((block) => block.commands).length,
    );
  });

  it('every command answers what its doc shows, and succeeds where it shows nothing', () => {
    const problems: string[] = [];
    for (const outcome of outcomes) {
      const { command } = outcome;
      const where = `${command.file}:${command.line}: ${command.text.split('\n')[0]}`;
      const stream = streaming.some((pattern) => pattern.test(command.text));
      const expectedExit = stream ? 28 : 0;
      if (outcome.exitCode !== expectedExit)
        problems.push(`${where}\n  exit ${outcome.exitCode}, expected ${expectedExit}`);
      const wanted = command.shown?.status;
      for (const status of outcome.httpStatuses) {
        if (wanted ? status !== wanted : status < 200 || status > 299)
          problems.push(`${where}\n  HTTP ${status}${wanted ? `, the doc shows ${wanted}` : ''}\n  ${outcome.stdout}`);
      }
      if (outcome.httpStatuses.length === 0 && /\bcurl\b/.test(command.text))
        problems.push(`${where}\n  made no HTTP request`);
      if (command.shown?.json) {
        let answer: unknown;
        try {
          answer = JSON.parse(outcome.stdout);
        } catch {
          problems.push(`${where}\n  printed ${JSON.stringify(outcome.stdout)}, not JSON`);
          continue;
        }
        const problem = matchesShown(answer, command.shown.json);
        if (problem) problems.push(`${where}\n  ${problem}\n  ${outcome.stdout}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('the app token has the policy asked for and the TTL, never root', async () => {
    expect(outcomeOf(/\/v1\/auth\/token\/create\b/).httpStatuses).toEqual([200]);
    const self = jsonOf(outcomeOf(/\/v1\/auth\/token\/lookup-self/));
    expect(self.data).toMatchObject({
      policies: ['app-reader', 'default'],
      creation_ttl: 7200,
      type: 'service',
      orphan: false,
    });
    expect(self.data.policies).not.toContain('root');
    expect(variables.APP).toMatch(/^hvs\./);
    expect(variables.APP).not.toBe(rootToken);
  });

  it('the policy lets the app token read and list kv/app/ and nothing else', () => {
    const read = jsonOf(outcomeOf(/-H "X-Secrets-Token: \$APP" \$VAULT_ADDR\/v1\/kv\/app\/db$/));
    expect(read).toMatchObject({ data: { password: 's3cret', ttl: '1h' }, renewable: true, lease_duration: 3600 });
    expect(jsonOf(outcomeOf(/-X LIST \$VAULT_ADDR\/v1\/kv\/app$/)).data.keys).toEqual(['db']);
    expect(jsonOf(outcomeOf(/kv\/app\?list=true/)).data.keys).toEqual(['db']);
    const denied = outcomeOf(/\$APP" \$VAULT_ADDR\/v1\/kv\/ops\/key/);
    expect(denied.httpStatuses).toEqual([403]);
    expect(jsonOf(denied)).toEqual({ errors: ['permission denied'] });
  });

  it('the lease is looked up, renewed by 30m and revoked; the revoked app token is refused', async () => {
    expect(variables.LEASE).toMatch(/^kv\/app\/db\/\w+/);
    const lookup = jsonOf(outcomeOf(/\/v1\/sys\/leases\/lookup/));
    expect(lookup.data).toMatchObject({ id: variables.LEASE, renewable: true });
    const renewed = jsonOf(outcomeOf(/\/v1\/sys\/leases\/renew/));
    expect(renewed).toMatchObject({ lease_id: variables.LEASE, lease_duration: 1800 });
    expect(outcomeOf(/\/v1\/sys\/leases\/revoke/).httpStatuses).toEqual([204]);

    const after = await fetch(`${started.secrets}/v1/sys/leases/lookup`, {
      method: 'PUT',
      headers: { 'X-Secrets-Token': rootToken, 'Content-Type': 'application/json' },
      body: JSON.stringify({ lease_id: variables.LEASE }),
    });
    expect(after.status).toBe(404);
    const app = await fetch(`${started.secrets}/v1/auth/token/lookup-self`, {
      headers: { 'X-Secrets-Token': variables.APP as string },
    });
    expect(app.status).toBe(403);
  });

  it('the extra kv mount is listed, then gone', async () => {
    const mounts = jsonOf(outcomeOf(/-H "X-Secrets-Token: \$ROOT" \$VAULT_ADDR\/v1\/sys\/mounts$/));
    expect(mounts.data['team-kv/']).toMatchObject({ type: 'kv', config: { default_lease_ttl: 600 } });
    const now = await fetch(`${started.secrets}/v1/sys/mounts`, { headers: { 'X-Secrets-Token': rootToken } });
    expect((await now.json()).data['team-kv/']).toBeUndefined();
  });

  it('the cluster node example starts a client agent that registers this machine as a ready node', async () => {
    expect(variables.INTRO).toMatch(/^eyJ[\w-]*\.[\w-]+\.[\w-]+$/);
    const agent = outcomeOf(/^npm run agent\b/);
    expect(agent.exitCode).toBe(0);
    const nodes = jsonOf(outcomeOf(/\$NOMAD_ADDR\/v1\/nodes$/));
    expect(nodes).toEqual([expect.objectContaining({ Name: hostname(), Status: 'ready', NodePool: 'default' })]);
    // The configuration the README wrote enabled raw_exec: the node offers it.
    const node = await fetch(`${started.scheduler}/v1/node/${nodes[0].ID}`, {
      headers: { 'X-Nomad-Token': variables.MGMT as string },
    });
    const body = (await node.json()) as { Attributes: Record<string, string>; Drivers: Record<string, unknown> };
    expect(body.Attributes['driver.raw_exec']).toBe('1');
    expect(body.Drivers.raw_exec).toMatchObject({ Detected: true, Healthy: true, HealthDescription: 'Healthy' });
  });

  it('the job example runs python3 -m http.server on the agent, serves it through the registry and scales it to 3', () => {
    const allocations = jsonOf(outcomeOf(/\$NOMAD_ADDR\/v1\/job\/web\/allocations$/));
    expect(allocations).toEqual([expect.objectContaining({ Name: 'web.web[0]', ClientStatus: 'running' })]);
    const services = jsonOf(outcomeOf(/\$NOMAD_ADDR\/v1\/service\/web$/));
    expect(services).toEqual([expect.objectContaining({ ServiceName: 'web', AllocID: allocations[0].ID })]);
    expect(outcomeOf(/echo served$/).stdout).toBe('served\n');
    expect(outcomeOf(/-eq 3 \]; do sleep 1; done$/).exitCode).toBe(0);
    // The stream replays it: the allocations as the agent reported them, registrations and their removal.
    // biome-ignore lint/suspicious/noExplicitAny: the stream's events as JSON
    type StreamEvent = Record<string, any>;
    const events = outcomeOf(/\/v1\/event\/stream\?topic=Allocation/)
      .stdout.split('\n')
      .filter((line) => line.trim() !== '')
      .flatMap((line) => (JSON.parse(line) as { Events?: StreamEvent[] }).Events ?? []);
    const reported = events.filter(
      (event) => event.Type === 'AllocationUpdated' && event.Payload?.Allocation?.JobID === 'web',
    );
    expect(reported.map((event) => event.Payload.Allocation.ClientStatus)).toEqual(
      expect.arrayContaining(['running', 'complete']),
    );
    // One registration for each of the three allocations, and each taken back by the agent's own delete before it
    // reports the allocation complete (as Nomad's client), so none by the server in the write of that report.
    const registrations = events.filter((event) => event.Topic === 'Service');
    expect(registrations.filter((event) => event.Type === 'ServiceRegistration')).toHaveLength(3);
    expect(registrations.filter((event) => event.Type === 'ServiceDeregistration')).toHaveLength(3);
    expect(registrations).toHaveLength(6);
  });

  it("the scheduler example (with the README's bootstrapped token) writes a policy and a role, and streams the role event", () => {
    expect(variables.MGMT).toMatch(/^[0-9a-f-]{36}$/);
    const roles = jsonOf(outcomeOf(/\$NOMAD_ADDR\/v1\/acl\/roles$/));
    expect(roles).toEqual([expect.objectContaining({ Name: 'ops', Policies: [{ Name: 'readonly' }] })]);
    const lines = outcomeOf(/\/v1\/event\/stream\?topic=ACLRole/)
      .stdout.split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line));
    expect(lines[0]).toEqual({});
    expect(lines).toContainEqual(
      expect.objectContaining({
        Events: [
          expect.objectContaining({ Topic: 'ACLRole', Payload: { ACLRole: expect.objectContaining({ Name: 'ops' }) } }),
        ],
      }),
    );
  });

  it("the LDAP example binds as the example's manager and rotates cn=app: the new password binds, the old one not", async () => {
    // The fixture's ACL lets its manager entry set passwords; the example's bind DN must be that entry.
    expect(directory.config.binddn).toBe(managerDn);
    expect(directory.config.url).toBe(readmeLdap);
    const cred = jsonOf(outcomeOf(/\$VAULT_ADDR\/v1\/ldap\/static-cred\/app$/));
    expect(cred.data).toMatchObject({ dn: directory.userDn, username: directory.username, rotation_period: 86400 });
    expect(cred.data.password).toMatch(/^\S{16,}$/);
    expect(variables.PASSWORD).toBe(cred.data.password);
    expect(outcomeOf(/^ldapwhoami /).stdout.trim()).toBe(`dn:${directory.userDn}`);
    expect(await slapd.canBind(directory.userDn, cred.data.password)).toBe(true);
    expect(await slapd.canBind(directory.userDn, directory.initialPassword)).toBe(false);
    expect(await slapd.canBind(managerDn, directory.config.bindpass as string)).toBe(true);
  });

  it("the JWT example signs a token offline and logs in with it: a service token with the role's policies", async () => {
    expect(variables.JWT?.split('.')).toHaveLength(3);
    const claims = JSON.parse(Buffer.from(variables.JWT?.split('.')[1] as string, 'base64url').toString());
    expect(claims).toMatchObject({ sub: 'ci-runner', aud: 'keyhaven' });
    const login = jsonOf(outcomeOf(/\/v1\/auth\/jwt\/login/));
    expect(login.auth).toMatchObject({
      policies: ['app-reader', 'default'],
      token_policies: ['app-reader', 'default'],
      lease_duration: 3600,
      renewable: true,
    });
    expect(login.auth.client_token).toMatch(/^hvs\./);
    const self = await fetch(`${started.secrets}/v1/auth/token/lookup-self`, {
      headers: { 'X-Secrets-Token': login.auth.client_token },
    });
    expect(self.status).toBe(200);
    expect((await self.json()).data).toMatchObject({
      path: 'auth/jwt/login',
      policies: ['app-reader', 'default'],
      meta: { role: 'ci' },
    });
  });
});
