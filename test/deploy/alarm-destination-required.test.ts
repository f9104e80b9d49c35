import { describe, expect, it } from 'vitest';
import { synthesize } from './synthesize.ts';

/** Issue 25: a stage outside dev whose alarms would reach nobody does not synthesise (so it cannot be deployed). */
describe('synthesis of a stage outside dev without alarmSubscriptions', () => {
  it('fails, naming the stage and the field to set', async () => {
    await expect(synthesize('staging')).rejects.toThrow(
      /stage config: staging is not a dev stage, so its alarms must reach a person: set alarmSubscriptions/,
    );
  }, 120_000);
});
