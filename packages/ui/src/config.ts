/** Where the two services answer: `config.json`, written by whoever serves the console (`serve.ts`, the stacks). */
export interface Config {
  /** The secrets service's origin; "" means the console's own origin. */
  secretsUrl: string;
  schedulerUrl: string;
}

let loaded: Config | undefined;

export async function loadConfig(): Promise<Config> {
  const response = await fetch('/ui/config.json', { cache: 'no-store' });
  if (!response.ok) throw new Error(`the console's config.json could not be read (HTTP ${response.status})`);
  const body = (await response.json()) as Partial<Config>;
  loaded = {
    secretsUrl: (body.secretsUrl ?? '').replace(/\/+$/, ''),
    schedulerUrl: (body.schedulerUrl ?? '').replace(/\/+$/, ''),
  };
  return loaded;
}

export function config(): Config {
  if (!loaded) throw new Error('the console config is not loaded yet');
  return loaded;
}
