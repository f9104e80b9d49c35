import type { JSX } from 'preact';
import { Link } from '../router.tsx';
import { kvHref } from './kv-mount.ts';

/** Mounts › mount › folder › … for a kv path (`a/b/` a folder, `a/b/c` a secret). */
export function KvBreadcrumbs({ mountPath, path }: { mountPath: string; path: string }): JSX.Element {
  const parts = path.split('/').filter(Boolean);
  const folders = path.endsWith('/') ? parts : parts.slice(0, -1);
  return (
    <nav class="breadcrumbs" aria-label="Breadcrumbs">
      <Link href="/ui/vault/secrets">Secret engines</Link>
      <span aria-hidden="true">›</span>
      <Link href={kvHref(mountPath, '')}>{mountPath}</Link>
      {folders.map((folder, index) => (
        <span key={folder + index}>
          <span aria-hidden="true">› </span>
          <Link href={kvHref(mountPath, `${folders.slice(0, index + 1).join('/')}/`)}>{folder}</Link>
        </span>
      ))}
      {path.endsWith('/') || parts.length === 0 ? null : (
        <span>
          <span aria-hidden="true">› </span>
          {parts[parts.length - 1]}
        </span>
      )}
    </nav>
  );
}
