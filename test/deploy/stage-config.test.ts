import { describe, expect, it } from 'vitest';
import { corsOf, stageConfig } from '../../stacks/stage-config.ts';

describe('stage config', () => {
  it('treats dev and test stages as disposable and others as protected', () => {
    expect(stageConfig('dev').isDev).toBe(true);
    expect(stageConfig('dev-alice').isDev).toBe(true);
    expect(stageConfig('prod').isDev).toBe(false);
  });

  it('refuses mounts that overlap, are reserved, or have no family', () => {
    expect(() => stageConfigWith([{ path: 'a', type: 'kv' }, { path: 'a/b', type: 'kv' }])).toThrow(/overlap/);
    expect(() => stageConfigWith([{ path: 'sys', type: 'kv' }])).toThrow(/reserved/);
    expect(() => stageConfigWith([{ path: 'x', type: 'nope' }])).toThrow(/unknown mount type/);
    expect(() => stageConfigWith([{ path: 'jwt', type: 'jwt' }])).toThrow(/auth\//);
  });
});

describe('CORS origins', () => {
  it('refuses * and anything but scheme://host[:port]', () => {
    for (const origin of ['*', 'https://*.example.com', 'example.com', 'https://a.example.com/path']) {
      expect(() => corsOf(stageConfig('test', 'us-east-1', { corsOrigins: [origin] }))).toThrow(/CORS origin/);
    }
    expect(corsOf(stageConfig('test', 'us-east-1', { corsOrigins: ['https://a.example.com:8443'] }))).toMatchObject({ allowOrigins: ['https://a.example.com:8443'] });
    expect(corsOf(stageConfig('test'))).toBe(false);
  });
});

function stageConfigWith(mounts: Array<{ path: string; type: string }>) {
  return stageConfig('test', 'us-east-1', { mounts });
}
