/**
 * The node's allocations, as Nomad's client keeps them (`client/client.go` runAllocs and allocSync): the allocation
 * runners restored from the data directory at start (`state-store.ts`), then for each allocation the map shows added
 * or changed, the allocation fetched (`GET /v1/client/allocation/:id`) and run, updated or stopped; an allocation the
 * map no longer lists is stopped if it still runs and forgotten. State changes are reported in batches (Nomad's
 * 200 ms) with `PUT /v1/client/node/:id/allocations`, each allocation once per change; the services of running
 * allocations are registered (`PUT /v1/client/services`) and those no longer wanted deleted
 * (`DELETE /v1/client/service/:id`). A failed call is tried again later; nothing is dropped.
 */
import type { Log } from '../log.ts';
import { type AllocUpdate, type ProtocolClient, ProtocolError, type ServiceRegistration } from '../protocol.ts';
import { collectAllocDirs } from './alloc-dir.ts';
import { AllocRunner } from './alloc-runner.ts';
import { allServices, wantedServices } from './services.ts';
import { AllocStateStore, type SavedAlloc } from './state-store.ts';
import type { Allocation, NodeInfo } from './types.ts';

export interface AllocationsOptions {
  client: ProtocolClient;
  node: NodeInfo;
  credential: () => string;
  dataDir: string;
  rawExecEnabled: boolean;
  log: Log;
  /** How long state changes gather before one report (default 200 ms, Nomad's). */
  batchMs?: number;
  /** How often a re-attached task's process is looked for (default 1 s). */
  pollMs?: number;
  /** How long a failed call waits before it is tried again (default 2 s). */
  retryMs?: number;
  hostEnv?: NodeJS.ProcessEnv;
}

const terminalClient = new Set(['complete', 'failed', 'lost']);

export class Allocations {
  readonly runners = new Map<string, AllocRunner>();
  private readonly store: AllocStateStore;
  /** Allocations to fetch (ID → the modify index the map showed). */
  private readonly toFetch = new Map<string, number>();
  /** The modify index of each allocation as last fetched. */
  private readonly fetched = new Map<string, number>();
  /** Allocations whose state changed since the last report. */
  private readonly dirty = new Set<string>();
  /** Updates for allocations the agent holds no runner for (stopped before they ran). */
  private readonly extra = new Map<string, AllocUpdate>();
  private readonly lastSent = new Map<string, string>();
  /** Service ID → the registration as last sent ('' when unknown: restored, it may or may not be registered). */
  private readonly registered = new Map<string, { allocId: string; sent: string }>();
  private timer: NodeJS.Timeout | undefined;
  private working: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: AllocationsOptions) {
    this.store = new AllocStateStore(options.dataDir);
  }

  /** Restores and resumes the allocations saved before the agent's last stop (re-attaching running tasks). */
  restore(): void {
    const { saved, unreadable } = this.store.loadAll();
    for (const name of unreadable) this.options.log(`client: saved allocation state ${name} is unreadable; ignored`);
    for (const entry of saved) {
      const runner = this.makeRunner(entry.Alloc, entry);
      for (const service of allServices(entry.Alloc, this.options.node))
        this.registered.set(service.ID, { allocId: entry.Alloc.ID, sent: '' });
      runner.start();
      this.dirty.add(runner.id);
    }
    if (saved.length > 0) this.options.log(`client: restored ${saved.length} allocations from the data directory`);
    this.schedule();
  }

  /**
   * The allocation map as read (ID → `AllocModifyIndex`): an allocation whose index is not the one last fetched is
   * fetched and acted on; one the map no longer lists (the server holds it terminal) is stopped and forgotten.
   */
  mapRead(allocs: Record<string, number>): void {
    for (const [id, index] of Object.entries(allocs)) if (this.fetched.get(id) !== index) this.toFetch.set(id, index);
    for (const id of new Set([...this.runners.keys(), ...this.toFetch.keys(), ...this.extra.keys()]))
      if (!(id in allocs)) this.forget(id);
    this.schedule(0);
  }

  /** The agent stops: the tasks run on (a restarted agent re-attaches); what is pending is reported once more. */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    await Promise.all([...this.runners.values()].map((runner) => runner.detach()));
    await this.working?.catch(() => undefined);
    this.stopped = true;
  }

  private makeRunner(alloc: Allocation, saved?: SavedAlloc): AllocRunner {
    const runner = new AllocRunner({
      alloc,
      node: this.options.node,
      dataDir: this.options.dataDir,
      store: this.store,
      rawExecEnabled: this.options.rawExecEnabled,
      ...(this.options.hostEnv ? { hostEnv: this.options.hostEnv } : {}),
      ...(this.options.pollMs ? { pollMs: this.options.pollMs } : {}),
      ...(saved ? { saved } : {}),
      onUpdate: (changed) => {
        this.dirty.add(changed.id);
        this.schedule();
      },
    });
    this.runners.set(alloc.ID, runner);
    return runner;
  }

  private forget(id: string): void {
    this.toFetch.delete(id);
    this.fetched.delete(id);
    this.extra.delete(id);
    const runner = this.runners.get(id);
    if (!runner) return;
    this.runners.delete(id);
    this.dirty.delete(id);
    this.lastSent.delete(id);
    void runner
      .stop()
      .then(() => runner.wait())
      .then(() => {
        this.store.remove(id);
        // Done allocations' folders (their logs) are kept, the newest 50 (Nomad's gc_max_allocs).
        collectAllocDirs(this.options.dataDir, new Set(this.runners.keys()));
        this.schedule();
      });
  }

  private schedule(ms = this.options.batchMs ?? 200): void {
    if (this.stopped) return;
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.working) {
        void this.working.then(() => this.schedule(0));
        return;
      }
      this.working = this.work().finally(() => {
        this.working = undefined;
      });
    }, ms);
  }

  private async work(): Promise<void> {
    let failed = false;
    try {
      await this.fetch();
    } catch (error) {
      failed = true;
      this.options.log(`client: allocation fetch failed: ${(error as Error).message}`);
    }
    // Services before the report, as Nomad's alloc runner deregisters a stopping allocation's services before its
    // terminal status is synced: a stopped allocation's registrations are deleted (`ServiceDeregistration`) before
    // the server learns it is complete; the server's own removal of a terminal allocation's services is the fallback.
    try {
      await this.syncServices();
    } catch (error) {
      failed = true;
      this.options.log(`client: service registration failed: ${(error as Error).message}`);
    }
    try {
      await this.report();
    } catch (error) {
      failed = true;
      this.options.log(`client: allocation update failed: ${(error as Error).message}`);
    }
    if (failed) this.schedule(this.options.retryMs ?? 2000);
  }

  private async fetch(): Promise<void> {
    for (const [id, index] of [...this.toFetch]) {
      let alloc: Allocation;
      try {
        alloc = await this.options.client.allocation(id, this.options.credential());
      } catch (error) {
        if (error instanceof ProtocolError && (error.status === 404 || error.status === 403)) {
          this.options.log(`client: allocation ${id} cannot be read (${error.status}); forgotten`);
          this.toFetch.delete(id);
          this.forget(id);
          continue;
        }
        throw error;
      }
      if (this.toFetch.get(id) === index) this.toFetch.delete(id);
      this.fetched.set(id, index);
      const runner = this.runners.get(id);
      if (runner) {
        runner.update(alloc);
        continue;
      }
      if (alloc.DesiredStatus !== 'run' || terminalClient.has(alloc.ClientStatus)) {
        // Stopped before this agent ran it: nothing to run, only the server to tell.
        if (!terminalClient.has(alloc.ClientStatus))
          this.extra.set(id, {
            ID: id,
            ClientStatus: 'complete',
            ClientDescription: 'the allocation was stopped before it ran',
            TaskStates: {},
          });
        continue;
      }
      this.options.log(`client: running allocation ${id} (${alloc.Name})`);
      const created = this.makeRunner(alloc);
      created.start();
      this.dirty.add(id);
    }
  }

  private async report(): Promise<void> {
    const updates: AllocUpdate[] = [...this.extra.values()];
    for (const id of this.dirty) {
      const runner = this.runners.get(id);
      if (!runner) continue;
      const { status, description } = runner.clientStatus;
      const update: AllocUpdate = {
        ID: id,
        ClientStatus: status,
        ClientDescription: description,
        TaskStates: runner.taskStates,
      };
      const health = runner.deploymentStatus;
      if (health) update.DeploymentStatus = health;
      if (this.lastSent.get(id) !== JSON.stringify(update)) updates.push(update);
    }
    this.dirty.clear();
    if (updates.length === 0) return;
    // The server takes 1 to 25 allocations a call.
    for (let start = 0; start < updates.length; start += 25) {
      const chunk = updates.slice(start, start + 25);
      try {
        await this.options.client.updateAllocations(this.options.node.ID, this.options.credential(), chunk);
      } catch (error) {
        // What was not taken is reported again (extras stay in their own map until taken).
        for (const update of updates.slice(start)) if (this.runners.has(update.ID)) this.dirty.add(update.ID);
        throw error;
      }
      for (const update of chunk) {
        if (this.extra.get(update.ID) === update) this.extra.delete(update.ID);
        else this.lastSent.set(update.ID, JSON.stringify(update));
      }
    }
  }

  private async syncServices(): Promise<void> {
    const wanted = new Map<string, ServiceRegistration>();
    for (const runner of this.runners.values())
      for (const service of wantedServices(runner, this.options.node)) wanted.set(service.ID, service);
    const upserts = [...wanted.values()].filter(
      (service) => this.registered.get(service.ID)?.sent !== JSON.stringify(service),
    );
    // The server takes at most 32 registrations a call.
    for (let start = 0; start < upserts.length; start += 32) {
      const chunk = upserts.slice(start, start + 32);
      await this.options.client.upsertServices(this.options.credential(), chunk);
      for (const service of chunk)
        this.registered.set(service.ID, { allocId: service.AllocID, sent: JSON.stringify(service) });
    }
    for (const id of [...this.registered.keys()]) {
      if (wanted.has(id)) continue;
      try {
        await this.options.client.deleteService(this.options.credential(), id);
      } catch (error) {
        if (!(error instanceof ProtocolError) || error.status !== 404) throw error;
      }
      this.registered.delete(id);
    }
  }
}
