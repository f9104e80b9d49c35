/**
 * Service registrations in the table, as Nomad's state store keeps them (`nomad/state/state_store_service_registration.go`):
 * one signed item per registration in its namespace's partition (`servicePk`, `<service name>#<ID>`), and beside it a
 * link in its allocation's partition (`serviceAllocPk`, the ID) that finds it by ID and by allocation. Every write is
 * one transaction at one index with its Service events (`state.ts`): `ServiceRegistration` for an upsert that changed
 * something, `ServiceDeregistration` for a delete, the allocation update's own type when a terminal allocation takes
 * its registrations with it (`allocationServicesRemoval`, which the allocation store calls in its transaction).
 */
import { notFound } from '../../../lib/errors.ts';
import { itemKind } from '../../../storage/item-mac.ts';
import type { Item, Store, Write } from '../../../storage/store.ts';
import { withoutKeys } from '../../acl/common.ts';
import { serviceAllocPk, servicePk, serviceSk } from '../../keys.ts';
import type { PendingEvent, SchedulerState, TableName } from '../../state.ts';
import { validNamespaceName } from '../namespaces/model.ts';
import {
  allocOfServiceId,
  type ServiceRegistration,
  sameRegistration,
  serviceEvent,
  validServiceName,
} from './model.ts';

export const serviceKind = itemKind('scheduler-service');

/** Nomad's text when a registration to delete is not there (a 500 in Nomad; a 404 here). */
export const registrationNotFound = () => notFound('service registration not found');

interface ServiceLink extends Item {
  Namespace: string;
  ServiceName: string;
}

const serviceKey = (registration: Pick<ServiceRegistration, 'Namespace' | 'ServiceName' | 'ID'>) => ({
  pk: servicePk(registration.Namespace),
  sk: serviceSk(registration.ServiceName, registration.ID),
});

const linkKey = (registration: Pick<ServiceRegistration, 'AllocID' | 'ID'>) => ({
  pk: serviceAllocPk(registration.AllocID),
  sk: registration.ID,
});

/** A registration item, verified, as the API object; a forged or moved one is none. */
function registrationOf(store: Store, item: Item | undefined): ServiceRegistration | undefined {
  return withoutKeys<ServiceRegistration>(store.verified(serviceKind, item));
}

/**
 * The registrations of one allocation: each link followed to its signed item, which must name the allocation and
 * the ID back (a forged link finds nothing).
 */
async function allocationRegistrations(store: Store, allocId: string): Promise<ServiceRegistration[]> {
  const links = await store.list<ServiceLink>(serviceAllocPk(allocId));
  if (links.length === 0) return [];
  const items = await store.batchGet(
    links.map((link) => serviceKey({ Namespace: link.Namespace, ServiceName: link.ServiceName, ID: link.sk })),
  );
  return [...items.values()]
    .map((item) => registrationOf(store, item))
    .filter(
      (registration): registration is ServiceRegistration =>
        registration !== undefined &&
        registration.AllocID === allocId &&
        links.some((link) => link.sk === registration.ID),
    )
    .sort((a, b) => (a.ID < b.ID ? -1 : a.ID > b.ID ? 1 : 0));
}

/** The deletes of one registration and its link. */
const removal = (registration: ServiceRegistration): Write[] => [
  { delete: serviceKey(registration) },
  { delete: linkKey(registration) },
];

/**
 * What removing every registration of an allocation writes, for the transaction of the write that makes the
 * allocation terminal (Nomad's `deregisterServicesForTerminalAllocs`, in the same transaction as the allocation): the
 * deletes, one Service event per registration typed as that write (`AllocationUpdated`, …, as Nomad's events take
 * the type of their raft message), and the table whose index moves (none when the allocation had none). Call it
 * inside `SchedulerState.commit`'s plan, so what it read holds when the transaction lands.
 */
export async function allocationServicesRemoval(
  store: Store,
  allocId: string,
  eventType: string,
): Promise<{ items: Write[]; events: PendingEvent[]; tables: TableName[] }> {
  const registrations = await allocationRegistrations(store, allocId);
  return {
    items: registrations.flatMap(removal),
    events: registrations.map((registration) => serviceEvent(eventType, registration)),
    tables: registrations.length > 0 ? ['service_registrations'] : [],
  };
}

export class ServiceRegistrations {
  constructor(private readonly state: SchedulerState) {}

  private get store() {
    return this.state.store;
  }

  /** The registrations of one namespace, sorted by service name, then ID. */
  async list(namespace: string): Promise<ServiceRegistration[]> {
    // A name no namespace can have holds nothing (and is never sent to the table as a key).
    if (!validNamespaceName.test(namespace)) return [];
    return (await this.store.list(servicePk(namespace)))
      .map((item) => registrationOf(this.store, item))
      .filter((registration): registration is ServiceRegistration => registration !== undefined);
  }

  /** The registrations of one service name in one namespace, sorted by ID. */
  async byName(namespace: string, name: string): Promise<ServiceRegistration[]> {
    if (!validNamespaceName.test(namespace) || !validServiceName.test(name)) return [];
    return (await this.store.list(servicePk(namespace), { prefix: `${name}#` }))
      .map((item) => registrationOf(this.store, item))
      .filter((registration): registration is ServiceRegistration => registration?.ServiceName === name);
  }

  /** The registrations of one job, sorted by ID (Nomad's `GetServiceRegistrationsByJobID`). */
  async ofJob(namespace: string, jobId: string): Promise<ServiceRegistration[]> {
    return (await this.list(namespace))
      .filter((registration) => registration.JobID === jobId)
      .sort((a, b) => (a.ID < b.ID ? -1 : a.ID > b.ID ? 1 : 0));
  }

  /** The registrations of one allocation (its links, each checked against its signed item), sorted by ID. */
  async ofAllocation(allocId: string): Promise<ServiceRegistration[]> {
    return (await allocationRegistrations(this.store, allocId)).sort((a, b) =>
      a.ID < b.ID ? -1 : a.ID > b.ID ? 1 : 0,
    );
  }

  /** The registration of that ID (in `namespace`, when given); only an ID of Nomad's form can name one. */
  async byId(id: string, namespace?: string): Promise<ServiceRegistration | undefined> {
    const allocId = allocOfServiceId(id);
    if (!allocId) return undefined;
    const found = (await allocationRegistrations(this.store, allocId)).find((registration) => registration.ID === id);
    return namespace === undefined || found?.Namespace === namespace ? found : undefined;
  }

  /**
   * Stores validated registrations (`validateServices`) at one index, as Nomad's `UpsertServiceRegistrations`: one
   * equal to what is stored is left alone (its indexes kept), a changed one keeps its `CreateIndex`; one
   * `ServiceRegistration` event per registration written. `admit` runs inside the write, before anything is
   * written, with what it must hold true (the node's allocations); it throws to refuse. The index of the write, or
   * the table's index when nothing changed.
   */
  async upsert(
    registrations: ServiceRegistration[],
    admit: (registrations: ServiceRegistration[]) => Promise<void> = async () => {},
  ): Promise<number> {
    const index = await this.state.commit(async (index) => {
      await admit(registrations);
      const allocations = [...new Set(registrations.map((registration) => registration.AllocID))];
      const stored = (
        await Promise.all(allocations.map((allocId) => allocationRegistrations(this.store, allocId)))
      ).flat();
      const items: Write[] = [];
      const events: PendingEvent[] = [];
      for (const registration of registrations) {
        const existing = stored.find((entry) => entry.ID === registration.ID);
        if (existing && sameRegistration(existing, registration)) continue;
        const written: ServiceRegistration = {
          ...registration,
          CreateIndex: existing?.CreateIndex ?? index,
          ModifyIndex: index,
        };
        // The same ID under another name or namespace is the same registration (Nomad keys it by namespace and ID).
        if (existing && (existing.ServiceName !== written.ServiceName || existing.Namespace !== written.Namespace))
          items.push({ delete: serviceKey(existing) });
        items.push({ put: this.store.signed(serviceKind, { ...serviceKey(written), ...written }) });
        items.push({
          put: { ...linkKey(written), Namespace: written.Namespace, ServiceName: written.ServiceName },
        });
        events.push(serviceEvent('ServiceRegistration', written));
      }
      if (items.length === 0) return undefined;
      return { items, tables: ['service_registrations'], events };
    });
    return index ?? (await this.state.tableIndex(['service_registrations']));
  }

  /**
   * Deletes the registration of that ID (Nomad's `DeleteServiceRegistrationByID`) with one `ServiceDeregistration`
   * event; 404 when there is none (in `namespace`, when given). `authorize` sees it first and throws to refuse.
   */
  async deleteById(
    id: string,
    authorize: (registration: ServiceRegistration) => void | Promise<void>,
    namespace?: string,
  ): Promise<number> {
    return this.state.commit(async () => {
      const registration = await this.byId(id, namespace);
      if (!registration) throw registrationNotFound();
      await authorize(registration);
      return {
        items: removal(registration),
        tables: ['service_registrations'],
        events: [serviceEvent('ServiceDeregistration', registration)],
      };
    });
  }
}
