/**
 * Task drivers the agent can offer, as Nomad's driver fingerprints report them in a node's `Drivers` (and the
 * `driver.<name>` attribute of a healthy one). `raw_exec` needs nothing but the ability to start a process, but it
 * runs tasks unisolated, as the agent's user, so as Nomad's it is detected and healthy only when the agent's
 * configuration enables it (`plugin "raw_exec" { config { enabled = true } }`); otherwise Nomad's fingerprint says
 * undetected, `disabled`. The runner (`runner/task-runner.ts`) refuses it the same way.
 */
export interface DriverInfo {
  Detected: boolean;
  Healthy: boolean;
  HealthDescription: string;
  /** RFC 3339, when the health last changed. */
  UpdateTime: string;
  Attributes: Record<string, string>;
}

export interface DriverSettings {
  rawExecEnabled: boolean;
}

/** Nomad's health descriptions. */
export const driverHealth = { healthy: 'Healthy', disabled: 'disabled' } as const;

export function fingerprintDrivers(settings: DriverSettings, now: Date): Record<string, DriverInfo> {
  return {
    raw_exec: {
      Detected: settings.rawExecEnabled,
      Healthy: settings.rawExecEnabled,
      HealthDescription: settings.rawExecEnabled ? driverHealth.healthy : driverHealth.disabled,
      UpdateTime: now.toISOString(),
      Attributes: settings.rawExecEnabled ? { 'driver.raw_exec': '1' } : {},
    },
  };
}

/** The `driver.<name>` attributes of the healthy drivers (what job constraints on a driver read). */
export function driverAttributes(drivers: Record<string, DriverInfo>): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const [name, info] of Object.entries(drivers))
    if (info.Detected && info.Healthy) attributes[`driver.${name}`] = '1';
  return attributes;
}
