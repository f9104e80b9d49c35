import type { JSX } from 'preact';
import { api, ApiError, secrets } from '../api.ts';
import { ErrorBox, Loading, Page, Table, useLoad } from '../components.tsx';
import { enginePageTypes } from '../engines/routes.tsx';
import { Link } from '../router.tsx';
import { mountHref } from './mount-links.ts';

interface MountInfo {
  type: string;
  description?: string;
  options?: Record<string, string> | null;
}

interface Answer {
  mounts?: Record<string, MountInfo>;
  refused?: ApiError;
}

/**
 * `GET sys/mounts`; a token refused it sees the 403 as the API said it. Then `sys/internal/ui/mounts` (what Vault's UI
 * asks for the mounts a token has some access to) is tried, and shown only when the service answers it.
 */
async function loadMounts(): Promise<Answer> {
  try {
    const answer = await secrets<{ data: Record<string, MountInfo> }>('GET', api`sys/mounts`);
    return { mounts: answer.data };
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 403) throw error;
    try {
      const visible = await secrets<{ data?: { secret?: Record<string, MountInfo> } }>(
        'GET',
        api`sys/internal/ui/mounts`,
      );
      return { refused: error, ...(visible?.data?.secret ? { mounts: visible.data.secret } : {}) };
    } catch {
      return { refused: error };
    }
  }
}

/** `/ui/vault/secrets`: the secret engine mounts the token may see, each linked to its browser. */
export function MountsPage(): JSX.Element {
  const loaded = useLoad(loadMounts, []);
  return (
    <Page title="Secret engines">
      <Loading loaded={loaded}>
        {({ mounts, refused }) => (
          <>
            <ErrorBox error={refused} />
            {refused && mounts ? (
              <p class="note">The mounts this token has some access to (sys/internal/ui/mounts):</p>
            ) : null}
            {mounts ? (
              <Table
                columns={['Path', 'Type', 'Description']}
                rows={Object.entries(mounts)
                  .sort(([a], [b]) => a.localeCompare(b))
                  .map(([path, mount]) => {
                    const href = mountHref(path, mount.type, enginePageTypes);
                    const version = mount.type === 'kv' ? ` v${mount.options?.version === '2' ? 2 : 1}` : '';
                    return [
                      <Link href={href}>{path}</Link>,
                      <span class="badge">{`${mount.type}${version}`}</span>,
                      mount.description || '',
                    ];
                  })}
                empty="No secret engines are mounted."
              />
            ) : null}
          </>
        )}
      </Loading>
    </Page>
  );
}
