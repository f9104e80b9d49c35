/** The agent's flags, environment and configuration file, as Nomad's agent reads them. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../packages/agent/src/config.ts';

const folder = mkdtempSync(path.join(tmpdir(), 'keyhaven-agent-config-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('agent settings', () => {
  it("has Nomad's defaults", () => {
    expect(loadConfig(['-data-dir', '/var/lib/agent'], {})).toEqual({
      dataDir: '/var/lib/agent',
      servers: ['http://127.0.0.1:4646'],
      rawExecEnabled: false,
      node: { datacenter: 'dc1', nodePool: 'default', nodeClass: '', meta: {}, httpPort: 4646 },
    });
  });

  it('reads every flag, in -flag value and --flag=value spellings, -meta repeated', () => {
    const config = loadConfig(
      [
        '--data-dir=/d',
        '-servers',
        'http://a:4646, http://b:4646',
        '-client-intro-token=eyJ.x.y',
        '-node',
        'web-1',
        '-dc',
        'eu-west',
        '-node-pool',
        'gpu',
        '-node-class',
        'large',
        '-meta',
        'rack=r1',
        '-meta',
        'zone=a=b',
        '-network-interface',
        'eth0',
      ],
      {},
    );
    expect(config).toEqual({
      dataDir: '/d',
      servers: ['http://a:4646', 'http://b:4646'],
      introToken: 'eyJ.x.y',
      networkInterface: 'eth0',
      rawExecEnabled: false,
      node: {
        name: 'web-1',
        datacenter: 'eu-west',
        nodePool: 'gpu',
        nodeClass: 'large',
        meta: { rack: 'r1', zone: 'a=b' },
        httpPort: 4646,
      },
    });
  });

  it('takes NOMAD_CLIENT_INTRO_TOKEN over the flag, as Nomad does', () => {
    const config = loadConfig(['-data-dir', '/d', '-client-intro-token', 'flag'], { NOMAD_CLIENT_INTRO_TOKEN: 'env' });
    expect(config).toMatchObject({ introToken: 'env' });
  });

  it('reads a JSON configuration file in Nomad’s names, flags winning over it', () => {
    const file = path.join(folder, 'agent.json');
    writeFileSync(
      file,
      JSON.stringify({
        data_dir: '/from-file',
        datacenter: 'dc9',
        ports: { http: 5646 },
        client: { servers: ['http://c:4646'], node_pool: 'batch', meta: { a: '1', b: '2' } },
        plugin: { raw_exec: { config: { enabled: true } } },
      }),
    );
    expect(loadConfig(['-config', file, '-meta', 'b=3', '-dc', 'dc2'], {})).toEqual({
      dataDir: '/from-file',
      servers: ['http://c:4646'],
      rawExecEnabled: true,
      node: { datacenter: 'dc2', nodePool: 'batch', nodeClass: '', meta: { a: '1', b: '3' }, httpPort: 5646 },
    });
  });

  it('names what is wrong', () => {
    expect(() => loadConfig([], {})).toThrow('-data-dir is required');
    expect(() => loadConfig(['-data-dir', '/d', '-bogus', 'x'], {})).toThrow('unknown flag -bogus');
    expect(() => loadConfig(['-data-dir'], {})).toThrow('flag -data-dir needs a value');
    expect(() => loadConfig(['-data-dir', '/d', '-meta', 'novalue'], {})).toThrow('-meta "novalue" is not KEY=VALUE');
    expect(() => loadConfig(['stray'], {})).toThrow('unexpected argument "stray"');
    const bad = path.join(folder, 'bad.json');
    writeFileSync(bad, JSON.stringify({ plugin: { raw_exec: { config: { enabled: 'yes' } } } }));
    expect(() => loadConfig(['-data-dir', '/d', '-config', bad], {})).toThrow(
      `-config ${bad}: plugin.raw_exec.config.enabled:`,
    );
    writeFileSync(bad, '{');
    expect(() => loadConfig(['-data-dir', '/d', '-config', bad], {})).toThrow(`-config ${bad} is not JSON`);
  });

  it('answers the usage text to -help', () => {
    expect(loadConfig(['-help'], {})).toBe('help');
  });
});
