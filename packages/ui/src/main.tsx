import { render } from 'preact';
import { App } from './app.tsx';
import { loadConfig } from './config.ts';

const root = document.getElementById('app') as HTMLElement;
loadConfig().then(
  () => {
    root.replaceChildren(); // the static "Loading…" line: Preact renders beside what is there, not over it
    render(<App />, root);
  },
  (error: unknown) => {
    root.textContent = error instanceof Error ? error.message : String(error);
  },
);
