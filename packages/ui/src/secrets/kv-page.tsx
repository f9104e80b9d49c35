import type { JSX } from 'preact';
import { ErrorBox, Loading, Page, useLoad } from '../components.tsx';
import { Link, useLocation } from '../router.tsx';
import { getSession } from '../session.ts';
import { KvList } from './kv-list.tsx';
import { type KvMount, resolveMount } from './kv-mount.ts';
import { KvNew } from './kv-new.tsx';
import { KvSecretV1 } from './kv-secret-v1.tsx';
import { KvSecretV2 } from './kv-secret-v2.tsx';

/** Mounts already resolved for this token, by mount path (a mount's version does not change while browsing). */
const known = new Map<string, KvMount>();

async function mountFor(path: string): Promise<KvMount> {
  const token = getSession('secrets')?.token ?? '';
  for (const [key, mount] of known) if (key.startsWith(`${token} `) && path.startsWith(mount.path)) return mount;
  const mount = await resolveMount(path);
  known.set(`${token} ${mount.path}`, mount);
  return mount;
}

/** `/ui/vault/secrets/<mount>/<path>`: a folder (ends in `/`), a secret, or `?new` for a new secret in the folder. */
export function KvPage({ path }: { path: string }): JSX.Element {
  const { query } = useLocation();
  const loaded = useLoad(() => mountFor(path), [path]);
  if (loaded.error !== undefined) {
    return (
      <Page title={path}>
        <ErrorBox error={loaded.error} />
      </Page>
    );
  }
  return (
    <Loading loaded={loaded}>
      {(mount) => {
        const rest = path.slice(mount.path.length);
        if (mount.type !== 'kv') {
          return (
            <Page title={mount.path}>
              <p>
                {mount.path} is a {mount.type} mount, not kv. <Link href="/ui/vault/secrets">All secret engines</Link>
              </p>
            </Page>
          );
        }
        const folder = rest === '' || rest.endsWith('/') ? rest : rest.slice(0, rest.lastIndexOf('/') + 1);
        if (query.has('new')) return <KvNew mount={mount} folder={folder} />;
        if (rest === '' || rest.endsWith('/')) return <KvList mount={mount} folder={rest} />;
        return mount.version === 2 ? (
          <KvSecretV2 key={rest} mount={mount} path={rest} />
        ) : (
          <KvSecretV1 key={rest} mount={mount} path={rest} />
        );
      }}
    </Loading>
  );
}
