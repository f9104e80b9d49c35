import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, connect as netConnect } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, InvalidCredentialsError, NoSuchObjectError } from 'ldapts';

/**
 * A real OpenLDAP `slapd` for one test file: its own cn=config and mdb database in a temporary folder,
 * listening on free ports for plain LDAP (with StartTLS) and LDAPS, with a throw-away EC certificate
 * authority. Seeded with people, groups, service accounts and a manager entry the engine binds as.
 */

export const baseDn = 'dc=example,dc=org';
/** The database's rootdn: never rotated, so tests can always inspect the directory with it. */
export const adminDn = `cn=admin,${baseDn}`;
export const adminPassword = 'admin-secret';
/** An ordinary entry with write access to everything: what the engine binds as (and rotates). */
export const managerDn = `cn=manager,${baseDn}`;
export const managerPassword = 'manager-secret';
export const peopleDn = `ou=people,${baseDn}`;
export const serviceAccountsDn = `ou=service-accounts,${baseDn}`;
export const dynamicDn = `ou=dynamic,${baseDn}`;
export const groupsDn = `ou=groups,${baseDn}`;

/** People seeded under ou=people with password `<name>-initial`. */
export const people = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan', 'judy'];
/** Service accounts seeded under ou=service-accounts with password `<name>-initial`. */
export const serviceAccounts = Array.from({ length: 12 }, (_, index) => `svc-${index + 1}`);

export interface Slapd {
  /** `ldap://127.0.0.1:PORT` (plain, StartTLS available). */
  url: string;
  /** `ldaps://127.0.0.1:PORT`. */
  ldapsUrl: string;
  /** PEM of the throw-away CA that signed the server certificate. */
  caCert: string;
  /** A client certificate and key signed by the same CA (slapd does not ask for one; accepted when sent). */
  clientCert: string;
  clientKey: string;
  dir: string;
  logFile: string;
  /** Whether `dn` can bind with `password` (false on invalid credentials). */
  canBind(dn: string, password: string): Promise<boolean>;
  /** Whether an entry exists. */
  exists(dn: string): Promise<boolean>;
  /** An entry's attributes as the admin sees them, or undefined. */
  entry(dn: string): Promise<Record<string, string | string[]> | undefined>;
  /** Stops the server (the data stays), for fault tests. */
  stop(): Promise<void>;
  /** Starts it again on the same ports with the same data. */
  start(): Promise<void>;
  /** Stops it and removes its folder. */
  close(): Promise<void>;
}

const sbin = (name: string) => (existsSync(`/usr/sbin/${name}`) ? `/usr/sbin/${name}` : name);
const installer = fileURLToPath(new URL('./install-test-deps.sh', import.meta.url));

/** Installs slapd with apt when this machine lacks it (a fresh CI machine). */
export function ensureSlapdInstalled(): void {
  execFileSync('sh', [installer], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 600_000 });
}

export interface SlapdOptions {
  /** The plain LDAP port (389 needs root); a free port when not given. */
  port?: number;
  /** LDIF of the database's entries instead of the seeded people and groups (the rootdn and ACLs stay). */
  seed?: string;
}

export async function startSlapd(options: SlapdOptions = {}): Promise<Slapd> {
  ensureSlapdInstalled();
  const dir = mkdtempSync('/tmp/keyhaven-slapd-');
  chmodSync(dir, 0o755);
  const [port, ldapsPort] = [options.port ?? (await freePort()), await freePort()];
  const logFile = path.join(dir, 'slapd.log');
  makeCertificates(dir);
  mkdirSync(path.join(dir, 'slapd.d'));
  mkdirSync(path.join(dir, 'data'));
  writeFileSync(path.join(dir, 'config.ldif'), configLdif(dir));
  writeFileSync(path.join(dir, 'seed.ldif'), options.seed ?? seedLdif());
  execFileSync(sbin('slapadd'), ['-n0', '-F', path.join(dir, 'slapd.d'), '-l', path.join(dir, 'config.ldif')], {
    stdio: 'pipe',
  });
  execFileSync(sbin('slapadd'), ['-n1', '-F', path.join(dir, 'slapd.d'), '-l', path.join(dir, 'seed.ldif')], {
    stdio: 'pipe',
  });
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chownTree(dir);

  const url = `ldap://127.0.0.1:${port}`;
  const ldapsUrl = `ldaps://127.0.0.1:${ldapsPort}`;
  let pid: number | undefined;

  const start = async () => {
    const out = openSync(logFile, 'a');
    // Detached: its own session, all three streams away from ours, so nothing waits on it.
    const child = spawn(
      sbin('slapd'),
      [
        '-h',
        `${url}/ ${ldapsUrl}/`,
        '-F',
        path.join(dir, 'slapd.d'),
        ...(asRoot ? ['-u', 'openldap', '-g', 'openldap'] : []),
        '-d',
        'stats',
      ],
      { detached: true, stdio: ['ignore', out, out] },
    );
    child.unref();
    pid = child.pid;
    const deadline = Date.now() + 10_000;
    // Up when its pid file names it (written once its listeners are bound) and the port answers: a port taken by
    // another server makes this slapd exit instead of passing for it.
    const pidFile = path.join(dir, 'slapd.pid');
    const ours = () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() === String(child.pid);
    while (!(ours() && (await listening(port)))) {
      if (Date.now() > deadline || child.exitCode !== null) {
        if (child.exitCode === null) child.kill('SIGKILL');
        pid = undefined;
        throw new Error(`slapd did not start:\n${readFileSync(logFile, 'utf8').slice(-3000)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const stop = async () => {
    if (pid === undefined) return;
    const stopping = pid;
    pid = undefined;
    try {
      process.kill(stopping, 'SIGTERM');
    } catch {
      return;
    }
    const deadline = Date.now() + 10_000;
    while (alive(stopping) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
    if (alive(stopping)) process.kill(stopping, 'SIGKILL');
    while (await listening(port)) await new Promise((resolve) => setTimeout(resolve, 25));
  };
  process.once('exit', () => {
    if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL');
  });
  try {
    await start();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  const admin = async <T>(work: (client: Client) => Promise<T>): Promise<T> => {
    const client = new Client({ url, timeout: 5000, connectTimeout: 5000 });
    try {
      await client.bind(adminDn, adminPassword);
      return await work(client);
    } finally {
      await client.unbind().catch(() => undefined);
    }
  };

  const entry = (dn: string) =>
    admin(async (client) => {
      try {
        const { searchEntries } = await client.search(dn, { scope: 'base' });
        const [found] = searchEntries;
        if (!found) return undefined;
        const { dn: _dn, ...attributes } = found;
        return Object.fromEntries(
          Object.entries(attributes).map(([key, value]) => [
            key,
            Array.isArray(value) ? value.map(String) : String(value),
          ]),
        );
      } catch (error) {
        if (error instanceof NoSuchObjectError) return undefined;
        throw error;
      }
    });

  return {
    url,
    ldapsUrl,
    caCert: readFileSync(path.join(dir, 'ca.pem'), 'utf8'),
    clientCert: readFileSync(path.join(dir, 'client.pem'), 'utf8'),
    clientKey: readFileSync(path.join(dir, 'client.key'), 'utf8'),
    dir,
    logFile,
    async canBind(dn, password) {
      const client = new Client({ url, timeout: 5000, connectTimeout: 5000 });
      try {
        await client.bind(dn, password);
        return true;
      } catch (error) {
        if (error instanceof InvalidCredentialsError) return false;
        throw error;
      } finally {
        await client.unbind().catch(() => undefined);
      }
    },
    exists: async (dn) => (await entry(dn)) !== undefined,
    entry,
    stop,
    start,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** slapd drops to `openldap`, which must own its config, data and keys. */
function chownTree(dir: string): void {
  const uid = Number(execFileSync('id', ['-u', 'openldap']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'openldap']).toString().trim());
  const walk = (target: string) => {
    chownSync(target, uid, gid);
    if (statSync(target).isDirectory()) for (const name of readdirSync(target)) walk(path.join(target, name));
  };
  walk(dir);
}

/** EC P-256 (instant, unlike RSA): a CA, a server certificate for 127.0.0.1 and a client certificate. */
function makeCertificates(dir: string): void {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Keyhaven test CA');
  for (const [name, subject, extensions] of [
    ['server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'],
    ['client', '/CN=keyhaven-client', 'extendedKeyUsage=clientAuth\n'],
  ] as const) {
    writeFileSync(path.join(dir, `${name}.ext`), extensions);
    openssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
  }
}

function configLdif(dir: string): string {
  const schema = (name: string) => `include: file:///etc/ldap/schema/${name}.ldif`;
  return `dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: ${dir}/slapd.pid
olcTLSCACertificateFile: ${dir}/ca.pem
olcTLSCertificateFile: ${dir}/server.pem
olcTLSCertificateKeyFile: ${dir}/server.key

dn: cn=module{0},cn=config
objectClass: olcModuleList
cn: module{0}
olcModulePath: /usr/lib/ldap
olcModuleLoad: back_mdb

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

${schema('core')}

${schema('cosine')}

${schema('nis')}

${schema('inetorgperson')}

dn: olcDatabase={-1}frontend,cn=config
objectClass: olcDatabaseConfig
objectClass: olcFrontendConfig
olcDatabase: {-1}frontend
olcSizeLimit: 5000

dn: olcDatabase={0}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {0}config
olcAccess: {0}to * by * none

dn: olcDatabase={1}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {1}mdb
olcSuffix: ${baseDn}
olcRootDN: ${adminDn}
olcRootPW: ${adminPassword}
olcDbDirectory: ${dir}/data
olcDbMaxSize: 67108864
olcDbIndex: objectClass eq
olcDbIndex: cn,uid eq
olcAccess: {0}to attrs=userPassword by dn.exact="${managerDn}" write by self write by anonymous auth by * none
olcAccess: {1}to * by dn.exact="${managerDn}" write by * read
`;
}

function seedLdif(): string {
  const entries = [
    `dn: ${baseDn}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example`,
    `dn: ${managerDn}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: manager\nuserPassword: ${managerPassword}`,
    ...[peopleDn, serviceAccountsDn, dynamicDn, groupsDn].map(
      (dn) => `dn: ${dn}\nobjectClass: organizationalUnit\nou: ${dn.slice(3, dn.indexOf(','))}`,
    ),
    `dn: ou=it,${peopleDn}\nobjectClass: organizationalUnit\nou: it`,
    ...people.map((name) => person(name, peopleDn)),
    person('mallory', `ou=it,${peopleDn}`),
    ...serviceAccounts.map((name) => person(name, serviceAccountsDn)),
    `dn: cn=developers,${groupsDn}\nobjectClass: groupOfNames\ncn: developers\nmember: cn=alice,${peopleDn}`,
  ];
  return `${entries.join('\n\n')}\n`;
}

function person(name: string, parent: string): string {
  return `dn: cn=${name},${parent}\nobjectClass: inetOrgPerson\ncn: ${name}\nsn: ${name}\nuid: ${name}\nuserPassword: ${name}-initial`;
}
