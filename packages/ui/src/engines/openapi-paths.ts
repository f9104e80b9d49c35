/** What the generic engine page (generic-engine.tsx) reads of the OpenAPI document `sys/internal/specs/openapi` answers. */
export interface OpenApiDocument {
  paths?: Record<string, Partial<Record<'get' | 'post' | 'delete', { summary?: string }>>>;
}

/** One path of a mount as the document describes it: under the mount, with what may be done there. */
export interface DescribedPath {
  /** The path under the mount (`roles/{name}`); a list is the path with `/` at its end. */
  path: string;
  /** `read`, `list`, `write`, `delete`, as the document's methods and its list paths say. */
  operations: string[];
  summary: string;
  /** Whether it has path parameters (`{name}`): only a path without can be called from the list as it stands. */
  parameterised: boolean;
}

/** The paths the document describes under `mount` (each key is `/<mount>/<path>`), in the document's order. */
export function describedPaths(document: OpenApiDocument, mount: string): DescribedPath[] {
  const prefix = `/${mount.replace(/\/+$/, '')}/`;
  return Object.entries(document.paths ?? {})
    .filter(([key]) => key.startsWith(prefix))
    .map(([key, item]) => {
      const path = key.slice(prefix.length);
      const list = path === '' || path.endsWith('/');
      const operations = [
        ...(item.get ? [list ? 'list' : 'read'] : []),
        ...(item.post ? ['write'] : []),
        ...(item.delete ? ['delete'] : []),
      ];
      const summary = item.get?.summary ?? item.post?.summary ?? item.delete?.summary ?? '';
      return { path, operations, summary, parameterised: path.includes('{') };
    });
}
