import { atLeast, type Token } from './model.ts';
import type { ConsulState } from './state.ts';

/** `GET /v1/agent/self`: `Config.Version` tells clients which endpoints exist. */
export function agentEndpoints(s: ConsulState) {
  const { enterprise, datacenter, demand } = s;
  function agentSelf(caller: Token): unknown {
    demand(caller, 'agent:read');
    const reported = enterprise ? `${s.versionText}+ent` : s.versionText;
    return {
      Config: {
        Datacenter: datacenter,
        PrimaryDatacenter: datacenter,
        NodeName: 'consul-emulator',
        NodeID: '5f0c7a59-6a8c-4ad4-9a4c-6c4f0c8c5a10',
        ...(enterprise && atLeast(s.version, 1, 11) ? { Partition: 'default' } : {}),
        Revision: 'emulator',
        Server: true,
        Version: reported,
        BuildDate: '2024-01-01T00:00:00Z',
      },
      DebugConfig: {},
      Coord: null,
      Member: {
        Name: 'consul-emulator',
        Addr: '127.0.0.1',
        Port: 8301,
        Tags: { build: `${reported}:emulator`, dc: datacenter, role: 'consul' },
        Status: 1,
      },
      Stats: {},
      Meta: { 'consul-network-segment': '' },
    };
  }

  return { agentSelf };
}
