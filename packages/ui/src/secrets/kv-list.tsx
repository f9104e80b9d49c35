import type { JSX } from 'preact';
import { Loading, Page, Table, useLoad } from '../components.tsx';
import { Link } from '../router.tsx';
import { KvBreadcrumbs } from './breadcrumbs.tsx';
import { type KvMount, kvHref, kvListPath } from './kv-mount.ts';
import { listAt } from './paths.ts';

/** A kv folder: its folders and secrets (`LIST <mount>/metadata/<folder>` for v2, `LIST <mount>/<folder>` for v1). */
export function KvList({ mount, folder }: { mount: KvMount; folder: string }): JSX.Element {
  const loaded = useLoad(() => listAt(kvListPath(mount, folder)), [mount.path, folder]);
  return (
    <Page
      title={`${mount.path}${folder}`}
      actions={
        <Link class="button" href={kvHref(mount.path, folder, 'new')}>
          Create secret
        </Link>
      }
    >
      <KvBreadcrumbs mountPath={mount.path} path={folder} />
      <p class="note">kv version {mount.version}</p>
      <Loading loaded={loaded}>
        {(keys) => (
          <Table
            columns={['Name', 'Kind']}
            rows={keys.map((key) => [
              <Link href={kvHref(mount.path, `${folder}${key}`)}>{key}</Link>,
              key.endsWith('/') ? 'folder' : 'secret',
            ])}
            empty="No secrets here yet."
          />
        )}
      </Loading>
    </Page>
  );
}
