import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';

/** Client-side routes under `/ui/`: the address bar is the state, so every page can be linked and reloaded. */
export interface RouteDef {
  /** e.g. `/ui/vault/secrets/:mount/*path`: `:name` is one segment, `*name` the rest (possibly empty). */
  pattern: string;
  title: string;
  view: (params: Record<string, string>) => JSX.Element;
}

export interface NavEntry {
  href: string;
  label: string;
}

const listeners = new Set<() => void>();
if (typeof window !== 'undefined') window.addEventListener('popstate', () => notify());
const notify = () => {
  for (const listener of listeners) listener();
};

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, '', to);
  else {
    history.pushState(null, '', to);
    window.scrollTo(0, 0); // a new page starts at its top, as a full page load would
  }
  notify();
}

export function useLocation(): { path: string; query: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((tick) => tick + 1);
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  }, []);
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

export function match(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/');
  const have = path.split('/');
  const params: Record<string, string> = {};
  for (let index = 0; index < want.length; index++) {
    const part = want[index] as string;
    if (part.startsWith('*')) {
      params[part.slice(1)] = have.slice(index).map(decodeURIComponent).join('/');
      return params;
    }
    const segment = have[index];
    if (segment === undefined) return undefined;
    if (part.startsWith(':')) {
      if (segment === '') return undefined;
      params[part.slice(1)] = decodeURIComponent(segment);
    } else if (part !== segment) return undefined;
  }
  return want.length === have.length ? params : undefined;
}

/** A link that moves within the console without reloading it (a modified click still opens a new tab). */
export function Link(props: {
  href: string;
  children: ComponentChildren;
  class?: string;
  'aria-current'?: 'page';
}): JSX.Element {
  const onClick = (event: MouseEvent) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(props.href);
  };
  return (
    <a href={props.href} class={props.class} aria-current={props['aria-current']} onClick={onClick}>
      {props.children}
    </a>
  );
}

/** Encodes each segment of a slash-separated path for a console URL. */
export const pathHref = (...parts: string[]): string =>
  parts
    .join('/')
    .split('/')
    .map((segment) => encodeURIComponent(segment))
    .join('/');
