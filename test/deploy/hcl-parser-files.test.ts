import { execFile } from 'node:child_process';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { hclParserFiles } from '../../stacks/functions.ts';

/**
 * The scheduler API function ships the HCL parser as folders beside its bundle (`hclParserFiles`, SST's `copyFiles`),
 * and the parse route imports it by name on first use. Here those folders alone are copied to a directory outside
 * the repository (no other node_modules to fall back on), as in the function's zip, and a Node 24 ES module there
 * imports the package and parses a job file: a missing folder (a dependency of a dependency) fails this test, not a
 * deployed Lambda.
 */
const run = promisify(execFile);

describe('the HCL parser folders the scheduler API function ships', () => {
  let dir: string | undefined;
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('load and parse on their own, imported by name from an ES module beside them', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'keyhaven-hcl-bundle-'));
    for (const file of hclParserFiles) await cp(file.from, path.join(dir, file.to), { recursive: true });
    await writeFile(
      path.join(dir, 'index.mjs'),
      [
        "const name = '@cdktf/hcl2json';",
        'const module = await import(name);',
        'const parse = module.parse ?? module.default.parse;',
        `console.log(JSON.stringify(await parse('input.hcl', 'job "web" {\\n  group "g" {\\n    count = 2\\n  }\\n}\\n')));`,
      ].join('\n'),
    );
    const { stdout } = await run(process.execPath, ['index.mjs'], { cwd: dir, timeout: 60_000 });
    expect(JSON.parse(stdout)).toEqual({ job: { web: [{ group: { g: [{ count: 2 }] } }] } });
    expect(process.versions.node.split('.')[0]).toBe('24');
  });
});
