/**
 * The client agent's life, as Nomad's client lives it (`client/client.go`): fingerprint the machine, register the
 * node (a new node with its introduction token, a known one with its SecretID), read its allocation map (again
 * whenever a register or heartbeat answer's `AllocIndex` moved past the map held: no blocking poll), report
 * `ready` once the map is synced, then heartbeat at the TTL each answer gives, taking the renewed node identity when
 * one comes back. The allocations (`runner/allocations.ts`) are restored from the data directory before the node
 * registers (running tasks re-attached), and follow every read of the map: fetched, run, stopped, reported. Node events (a driver's health) follow registration. A refused heartbeat (the node was purged, its
 * credential is no longer taken) registers again; an unreachable server is retried within the heartbeat's grace. A
 * plain stop deregisters nothing: the node goes `down` when its heartbeats stop, and the same node comes back when
 * the agent starts again from the same data directory.
 */
import { loadOrCreateIdentity, storedIntroToken } from './client-state.ts';
import type { AgentConfig } from './config.ts';
import { type DriverInfo, fingerprintDrivers } from './drivers.ts';
import { AllocWatcher } from './alloc-watcher.ts';
import { fingerprintMachine } from './fingerprint/index.ts';
import { type Log, stdoutLog } from './log.ts';
import { buildNode, type ClientNode, nodeEvent } from './node.ts';
import { type NodeUpdateResponse, ProtocolClient, ProtocolError } from './protocol.ts';
import { Allocations } from './runner/allocations.ts';

export interface AgentOptions {
  config: AgentConfig;
  /** A client to share (tests); by default the agent makes its own over `config.servers`. */
  client?: ProtocolClient;
  log?: Log;
}

/** How long to wait before trying a failed registration or heartbeat again: 1–5 s, growing to 30 s. */
const retryMs = (failures: number) => Math.min(30_000, 1000 * 2 ** Math.min(failures, 5)) * (0.5 + Math.random() / 2);

/** The seconds part of a JWT's `exp`, unverified (the agent only needs to know when to stop presenting it). */
function expiresAt(jwt: string): number | undefined {
  try {
    const payload = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof payload.exp === 'number' ? payload.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

export class Agent {
  readonly client: ProtocolClient;
  private readonly ownsClient: boolean;
  private readonly log: Log;
  private readonly stopping = new AbortController();
  private node: ClientNode | undefined;
  private identity: string | undefined;
  private heartbeatTtlMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private failures = 0;
  private watcher: AllocWatcher | undefined;
  private allocs: Allocations | undefined;
  private reportedDrivers = new Map<string, string>();
  private registering: Promise<void> | undefined;
  /** Whether the server has taken this node before (it re-registers with its secret; a new node with its token). */
  private known = false;
  /** The status the agent last had accepted: `initializing` until its allocations are synced, then `ready`. */
  status: 'initializing' | 'ready' = 'initializing';

  constructor(private readonly options: AgentOptions) {
    this.ownsClient = !options.client;
    this.client = options.client ?? new ProtocolClient({ servers: options.config.servers });
    this.log = options.log ?? stdoutLog;
  }

  get nodeId(): string | undefined {
    return this.node?.ID;
  }

  /** Fingerprints, registers (retrying until the server takes the node, or the agent stops) and starts heartbeating. */
  async start(): Promise<void> {
    const { config } = this.options;
    const stored = loadOrCreateIdentity(config.dataDir);
    const machine = fingerprintMachine({
      dataDir: config.dataDir,
      ...(config.networkInterface ? { networkInterface: config.networkInterface } : {}),
    });
    const drivers = fingerprintDrivers({ rawExecEnabled: config.rawExecEnabled }, new Date());
    this.node = buildNode(stored, config.node, machine, drivers);
    this.known = !stored.created;
    this.log(
      `client: node ${this.node.ID} (${this.node.Name}): ${machine.cpu.cores} cores × ${machine.cpu.mhz} MHz, ` +
        `${this.node.NodeResources.Memory.MemoryMB} MiB memory, ${this.node.NodeResources.Disk.DiskMB} MiB free on ` +
        `${machine.storage.volume}, drivers: ${Object.entries(drivers)
          .map(([name, info]) => `${name} (${info.HealthDescription})`)
          .join(', ')}`,
    );
    if (stored.created && !this.introToken())
      throw new Error(
        'this is a new node and no introduction token was given: pass -client-intro-token (or NOMAD_CLIENT_INTRO_TOKEN)',
      );
    const node = this.node;
    this.allocs = new Allocations({
      client: this.client,
      node: {
        ID: node.ID,
        Name: node.Name,
        Datacenter: node.Datacenter,
        NodeClass: node.NodeClass,
        NodePool: node.NodePool,
        Address: machine.network.ip,
        Attributes: node.Attributes,
        Meta: node.Meta,
      },
      credential: () => this.credential(),
      dataDir: config.dataDir,
      rawExecEnabled: config.rawExecEnabled,
      log: this.log,
    });
    this.allocs.restore();
    await this.register();
  }

  /** Stops heartbeating and watching; the node stays registered and its tasks run on (Nomad's plain stop). */
  async stop(): Promise<void> {
    this.stopping.abort();
    if (this.timer) clearTimeout(this.timer);
    await this.watcher?.stop();
    await this.allocs?.stop();
    await this.registering?.catch(() => undefined);
    if (this.ownsClient) this.client.close();
  }

  private introToken(): string | undefined {
    return this.options.config.introToken ?? storedIntroToken(this.options.config.dataDir);
  }

  /** The credential of calls after registration: the node identity while it is valid, else the SecretID. */
  private credential(): string {
    const node = this.node as ClientNode;
    const expires = this.identity ? expiresAt(this.identity) : undefined;
    if (this.identity && (expires === undefined || expires > Date.now() + 5000)) return this.identity;
    return node.SecretID;
  }

  private register(): Promise<void> {
    this.registering ??= this.registerUntilTaken().finally(() => {
      this.registering = undefined;
    });
    return this.registering;
  }

  private async registerUntilTaken(): Promise<void> {
    const node = this.node as ClientNode;
    for (let attempt = 0; !this.stopping.signal.aborted; attempt++) {
      try {
        const answer = await this.registerOnce(node);
        this.accept(answer);
        this.failures = 0;
        this.log(`client: node registered (HeartbeatTTL ${Math.round(this.heartbeatTtlMs / 1000)} s)`);
        await this.reportDrivers(node.Drivers);
        const watcher = this.watchAllocations();
        const wasSynced = watcher.synced;
        // Once after every registration, whatever the index (the server may have been restored or the node purged).
        void watcher.update(answer.AllocIndex, true);
        // Registered again with the allocations already synced: report at once rather than after a TTL.
        if (wasSynced) this.beatSoon();
        return;
      } catch (error) {
        if (this.stopping.signal.aborted) return;
        const wait = retryMs(attempt);
        this.log(`client: registration failed, retrying in ${Math.round(wait / 1000)} s: ${(error as Error).message}`);
        await new Promise((resolve) => {
          this.timer = setTimeout(resolve, wait);
        });
      }
    }
  }

  /** A known node registers with its own secret; a new one (or one the server forgot) with its introduction token. */
  private async registerOnce(node: ClientNode): Promise<NodeUpdateResponse> {
    const signal = this.stopping.signal;
    const intro = this.introToken();
    if (!this.known && intro) {
      const answer = await this.client.register(node, intro, { signal });
      this.known = true;
      return answer;
    }
    try {
      return await this.client.register(node, this.credential(), { signal });
    } catch (error) {
      if (!(error instanceof ProtocolError) || error.status !== 403 || !intro) throw error;
      this.identity = undefined;
      return await this.client.register(node, intro, { signal });
    }
  }

  private accept(answer: NodeUpdateResponse): void {
    this.heartbeatTtlMs = Math.max(1000, answer.HeartbeatTTL / 1e6);
    if (answer.SignedIdentity) this.identity = answer.SignedIdentity;
  }

  /** A node event for each driver whose health is new or changed (Nomad's `Driver` subsystem events). */
  private async reportDrivers(drivers: Record<string, DriverInfo>): Promise<void> {
    const changed = Object.entries(drivers).filter(
      ([name, info]) => this.reportedDrivers.get(name) !== info.HealthDescription,
    );
    if (changed.length === 0) return;
    const now = new Date();
    await this.client.emitEvents(
      (this.node as ClientNode).ID,
      this.credential(),
      changed.map(([name, info]) => nodeEvent(info.HealthDescription, 'Driver', { driver: name }, now)),
      { signal: this.stopping.signal },
    );
    for (const [name, info] of changed) this.reportedDrivers.set(name, info.HealthDescription);
  }

  private watchAllocations(): AllocWatcher {
    if (this.watcher) return this.watcher;
    const node = this.node as ClientNode;
    this.watcher = new AllocWatcher({
      client: this.client,
      nodeId: node.ID,
      credential: () => this.credential(),
      log: this.log,
      onSynced: () => this.beatSoon(),
      onRead: (allocs) => this.allocs?.mapRead(allocs),
      onRefused: () => void this.register(),
    });
    return this.watcher;
  }

  /** The next heartbeat now (the allocations were synced: the node can report `ready`). */
  private beatSoon(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.heartbeat(), 0);
  }

  private schedule(ms: number): void {
    if (this.stopping.signal.aborted) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.heartbeat(), ms);
  }

  private async heartbeat(): Promise<void> {
    if (this.stopping.signal.aborted) return;
    // Registering again (the allocation watch was refused): beat once it is done.
    if (this.registering) {
      void this.registering.then(() => this.schedule(0));
      return;
    }
    const node = this.node as ClientNode;
    const wanted = this.watcher?.synced ? 'ready' : 'initializing';
    try {
      const answer = await this.client.updateStatus(node.ID, this.credential(), wanted, undefined, {
        signal: this.stopping.signal,
      });
      this.accept(answer);
      // The allocation map moved (or is not synced yet): read it, without blocking.
      void this.watcher?.update(answer.AllocIndex);
      if (this.status !== wanted) this.log(`client: node status ${wanted}`);
      this.status = wanted;
      this.failures = 0;
      this.schedule(this.heartbeatTtlMs);
    } catch (error) {
      if (this.stopping.signal.aborted) return;
      if (error instanceof ProtocolError && (error.status === 404 || error.status === 403)) {
        this.log(`client: heartbeat refused (${error.status}), registering again`);
        this.identity = undefined;
        await this.register();
        this.schedule(0);
        return;
      }
      this.failures++;
      const wait = retryMs(this.failures);
      this.log(`client: heartbeat failed, retrying in ${Math.round(wait / 1000)} s: ${(error as Error).message}`);
      this.schedule(wait);
    }
  }
}
