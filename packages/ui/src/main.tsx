import { render } from 'preact';
import { App } from './app.tsx';
import { loadConfig } from './config.ts';

const root = document.getElementById('app') as HTMLElement;
loadConfig().then(
  () => render(<App />, root),
  (error: unknown) => {
    root.textContent = error instanceof Error ? error.message : String(error);
  },
);
