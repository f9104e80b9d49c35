import { describe, expect, it } from 'vitest';
import { stageConfig } from '../../stacks/stage-config.ts';

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

function stageConfigWith(mounts: Array<{ path: string; type: string }>) {
  return stageConfig('test', 'us-east-1', { mounts });
}
