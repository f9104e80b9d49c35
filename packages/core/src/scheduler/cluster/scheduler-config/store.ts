/**
 * The scheduler configuration in the table: one signed item (`SCHEDULER_CONFIG_PK`), absent until an operator
 * writes it (then Nomad's defaults are answered, at index 1). A write is one transaction at one index, as Nomad's
 * `SchedulerConfigRequestType`; with `cas` it lands only if the stored configuration is still at that index (the
 * defaults are at 1), and answers whether it did. Nomad publishes no event for it, nor does this.
 */
import { itemKind } from '../../../storage/item-mac.ts';
import { withoutKeys } from '../../acl/common.ts';
import { SCHEDULER_CONFIG_PK, SCHEDULER_CONFIG_SK } from '../../keys.ts';
import { conflict } from '../../../lib/errors.ts';
import { type SchedulerState, WriteConditionFailed } from '../../state.ts';
import { defaultSchedulerConfig, type SchedulerConfigContent, type SchedulerConfiguration } from './model.ts';

/** The configuration item is authenticated whole (`storage/item-mac.ts`): a forged one is not read. */
export const schedulerConfigKind = itemKind('scheduler-config');

export class SchedulerConfigs {
  constructor(private readonly state: SchedulerState) {}

  /** The stored configuration, undefined while the defaults hold. */
  private async stored(): Promise<SchedulerConfiguration | undefined> {
    return withoutKeys<SchedulerConfiguration>(
      await this.state.store.getVerified(schedulerConfigKind, SCHEDULER_CONFIG_PK, SCHEDULER_CONFIG_SK),
    );
  }

  /** The configuration in force: the stored one, else Nomad's defaults. */
  async get(): Promise<SchedulerConfiguration> {
    return (await this.stored()) ?? structuredClone(defaultSchedulerConfig);
  }

  /**
   * Sets the configuration; with `cas`, only when the one in force is at that index. Returns whether it was written
   * and the index (the write's, else the configuration's).
   */
  async set(content: SchedulerConfigContent, cas?: number): Promise<{ updated: boolean; index: number }> {
    let updated = false;
    let index = 0;
    try {
      await this.state.commit(async (next) => {
        const existing = await this.stored();
        const current = existing ?? defaultSchedulerConfig;
        if (cas !== undefined && current.ModifyIndex !== cas) {
          updated = false;
          index = current.ModifyIndex;
          return undefined;
        }
        updated = true;
        index = next;
        const config: SchedulerConfiguration = {
          ...content,
          CreateIndex: existing?.CreateIndex ?? next,
          ModifyIndex: next,
        };
        return {
          items: [
            {
              put: this.state.store.signed(schedulerConfigKind, {
                pk: SCHEDULER_CONFIG_PK,
                sk: SCHEDULER_CONFIG_SK,
                ...config,
              }),
              when: existing ? { equals: { ModifyIndex: existing.ModifyIndex } } : { absent: true },
            },
          ],
          tables: ['scheduler_config'],
        };
      });
    } catch (error) {
      if (error instanceof WriteConditionFailed)
        throw conflict('the scheduler configuration was modified concurrently; retry');
      throw error;
    }
    return { updated, index };
  }
}
