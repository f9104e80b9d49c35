import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The console's files as served under `/ui/`: the page, its one script and its one style sheet. */
export interface ConsoleAssets {
  'index.html': string;
  'app.js': string;
  'app.css': string;
}

const source = path.join(path.dirname(fileURLToPath(import.meta.url)), 'src');

/**
 * Builds the console with esbuild (already the stacks' bundler; it takes ~100 ms, so `npm start` builds at start
 * with no separate step): `src/main.tsx` and everything it imports into one minified ES module, Preact included.
 */
export async function buildConsoleAssets(): Promise<ConsoleAssets> {
  const result = await build({
    entryPoints: [path.join(source, 'main.tsx')],
    bundle: true,
    write: false,
    format: 'esm',
    target: 'es2022',
    minify: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    outfile: 'app.js',
  });
  const script = result.outputFiles.find((file) => file.path.endsWith('.js'));
  if (!script) throw new Error('the console build produced no script');
  return {
    'index.html': readFileSync(path.join(source, 'index.html'), 'utf8'),
    'app.js': script.text,
    'app.css': readFileSync(path.join(source, 'app.css'), 'utf8'),
  };
}

/** Writes the built console into `outDir` (for the stacks' S3 deployment). */
export async function buildConsole(outDir: string): Promise<ConsoleAssets> {
  const assets = await buildConsoleAssets();
  mkdirSync(outDir, { recursive: true });
  for (const [name, text] of Object.entries(assets)) writeFileSync(path.join(outDir, name), text);
  return assets;
}
