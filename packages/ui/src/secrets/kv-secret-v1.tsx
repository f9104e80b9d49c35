import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { secrets } from '../api.ts';
import { Details, ErrorBox, formatSeconds, Loading, Page, useAction, useLoad } from '../components.tsx';
import { Link, navigate } from '../router.tsx';
import { KvBreadcrumbs } from './breadcrumbs.tsx';
import { ConfirmButton } from './confirm-button.tsx';
import { KvEditor } from './kv-editor.tsx';
import { type KvMount, kvDataPath, kvHref } from './kv-mount.ts';
import { SecretData } from './secret-data.tsx';

interface V1Answer {
  data: Record<string, unknown>;
  lease_id?: string;
  lease_duration?: number;
  renewable?: boolean;
}

/** A kv version 1 secret: its data (hidden until revealed), its lease when written with a `ttl`, edit and delete. */
export function KvSecretV1({ mount, path }: { mount: KvMount; path: string }): JSX.Element {
  const loaded = useLoad(() => secrets<V1Answer>('GET', kvDataPath(mount, path)), [mount.path, path]);
  const [editing, setEditing] = useState(false);
  const action = useAction();
  const folder = path.slice(0, path.lastIndexOf('/') + 1);
  return (
    <Page title={`${mount.path}${path}`}>
      <KvBreadcrumbs mountPath={mount.path} path={path} />
      <ErrorBox error={action.error} />
      <Loading loaded={loaded}>
        {(answer) =>
          editing ? (
            <KvEditor
              initial={answer.data}
              submitLabel="Save"
              onCancel={() => setEditing(false)}
              onSave={async (data) => {
                await secrets('POST', kvDataPath(mount, path), data);
                setEditing(false);
                loaded.reload();
              }}
            />
          ) : (
            <>
              <section class="panel">
                <h2>Data</h2>
                <SecretData data={answer.data} />
                <div class="actions">
                  <button type="button" onClick={() => setEditing(true)}>
                    Edit secret
                  </button>
                  <ConfirmButton
                    label="Delete secret"
                    question={`Delete ${mount.path}${path}? kv version 1 keeps no copy.`}
                    disabled={action.busy}
                    onConfirm={() =>
                      void action.run(async () => {
                        await secrets('DELETE', kvDataPath(mount, path));
                        navigate(kvHref(mount.path, folder));
                      })
                    }
                  />
                </div>
              </section>
              {answer.lease_duration ? (
                <section class="panel">
                  <h2>Lease</h2>
                  <Details
                    rows={[
                      [
                        'Lease ID',
                        answer.lease_id ? (
                          <Link href={`/ui/vault/leases?lease=${encodeURIComponent(answer.lease_id)}`}>
                            {answer.lease_id}
                          </Link>
                        ) : (
                          '—'
                        ),
                      ],
                      ['Duration', formatSeconds(answer.lease_duration)],
                      ['Renewable', answer.renewable ? 'yes' : 'no'],
                    ]}
                  />
                </section>
              ) : null}
            </>
          )
        }
      </Loading>
    </Page>
  );
}
