import { api, type ApiPath, segments } from '../api.ts';
import type { ComponentChildren, JSX } from 'preact';
import { Page } from '../components.tsx';
import { Link, useLocation } from '../router.tsx';

/** An engine's pages under `/ui/vault/<kind>/<mount>`: its tabs (configuration first) and its frame. */
export interface EngineDef {
  kind: 'ldap' | 'cloud' | 'mesh';
  /** e.g. "Directory". */
  label: string;
  /** The console segments of its collections, in tab order; '' is the configuration. */
  tabs: Array<{ segment: string; title: string }>;
}

/** The console address of a mount's page (the mount is one segment, a slash in it encoded). */
export const engineHref = (engine: EngineDef, mount: string, ...rest: string[]): string =>
  [
    `/ui/vault/${engine.kind}/${encodeURIComponent(mount)}`,
    ...rest.filter((part) => part !== '').map((part) => part.split('/').map(encodeURIComponent).join('/')),
  ].join('/');

/**
 * An API path under the mount (`api`): the mount is one segment, as the console's engine routes give it (a value
 * holding `/`, `#` or `?` cannot reach another path: issue 37 §3); each part after it may hold slashes (names of
 * hierarchical roles), each of its segments encoded.
 */
export const apiPath = (mount: string, ...parts: string[]): ApiPath => {
  const rest = parts.filter((part) => part !== '').join('/');
  const mountSegment = mount.replace(/\/+$/, '');
  return rest ? api`${mountSegment}/${segments(rest)}` : api`${mountSegment}`;
};

export function EngineFrame(props: {
  engine: EngineDef;
  mount: string;
  title: string;
  actions?: ComponentChildren;
  children: ComponentChildren;
}): JSX.Element {
  const { path } = useLocation();
  const { engine, mount } = props;
  return (
    <Page title={props.title} actions={props.actions}>
      <p class="note">
        {engine.label} engine at <code>{mount.replace(/\/*$/, '/')}</code>
      </p>
      <nav class="engine-tabs" aria-label={`${engine.label} engine at ${mount}`}>
        {engine.tabs.map((tab) => {
          const href = engineHref(engine, mount, tab.segment);
          const current =
            tab.segment === ''
              ? path === href
              : path === href ||
                path.startsWith(`${href}/`) ||
                path === engineHref(engine, mount, 'create', tab.segment);
          return (
            <Link key={tab.segment} href={href} aria-current={current ? 'page' : undefined}>
              {tab.title}
            </Link>
          );
        })}
      </nav>
      <div class="engine">{props.children}</div>
    </Page>
  );
}

/** The warnings a write answered with (the API's own words). */
export function Warnings({ warnings }: { warnings: string[] | undefined }): JSX.Element | null {
  if (!warnings?.length) return null;
  return (
    <div class="note warnings" role="status">
      <strong>Warnings</strong>
      <ul>
        {warnings.map((warning) => (
          <li key={warning}>{warning}</li>
        ))}
      </ul>
    </div>
  );
}

/** The `warnings` of a write's answer, if it had a body. */
export const warningsOf = (answer: unknown): string[] => {
  const warnings = (answer as { warnings?: unknown } | undefined)?.warnings;
  return Array.isArray(warnings) ? warnings.map(String) : [];
};
