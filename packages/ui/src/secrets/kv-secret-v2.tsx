import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { secrets } from '../api.ts';
import { ErrorBox, Loading, Page, useAction, useLoad } from '../components.tsx';
import { navigate, useLocation } from '../router.tsx';
import { KvBreadcrumbs } from './breadcrumbs.tsx';
import { ConfirmButton } from './confirm-button.tsx';
import { KvEditor } from './kv-editor.tsx';
import { KvMetadataForm } from './kv-metadata.tsx';
import {
  isDeleted,
  type KvMetadata,
  type KvMount,
  kvDataPath,
  kvHref,
  kvMetadataPath,
  kvVersionsPath,
} from './kv-mount.ts';
import { readKvVersion } from './kv-read.ts';
import { KvVersions } from './kv-versions.tsx';
import { timeText } from './paths.ts';
import { SecretData } from './secret-data.tsx';

/** The secret's metadata (or why it could not be read: a token may read data without metadata). */
async function loadMetadata(mount: KvMount, path: string): Promise<{ metadata?: KvMetadata; error?: unknown }> {
  try {
    return { metadata: (await secrets<{ data: KvMetadata }>('GET', kvMetadataPath(mount, path))).data };
  } catch (error) {
    return { error };
  }
}

const pastTense = { delete: 'deleted', undelete: 'undeleted', destroy: 'destroyed' } as const;

const tabs = [
  ['secret', 'Secret'],
  ['versions', 'Versions'],
  ['metadata', 'Metadata'],
] as const;

/** A kv version 2 secret: a version's data (hidden until revealed), new versions with check-and-set, versions, metadata. */
export function KvSecretV2({ mount, path }: { mount: KvMount; path: string }): JSX.Element {
  const { query } = useLocation();
  const tab = query.get('tab') ?? 'secret';
  const asked = Number(query.get('version')) || undefined;
  const meta = useLoad(() => loadMetadata(mount, path), [mount.path, path]);
  const read = useLoad(() => readKvVersion(mount, path, asked), [mount.path, path, asked]);
  const [editing, setEditing] = useState(false);
  const [done, setDone] = useState('');
  const action = useAction();
  const reload = () => {
    meta.reload();
    read.reload();
  };
  const act = (message: string, change: () => Promise<unknown>) =>
    void action.run(async () => {
      setDone('');
      await change();
      setDone(message);
      reload();
    });
  const versionsCall = (kind: 'delete' | 'undelete' | 'destroy', versions: number[]) =>
    secrets('POST', kvVersionsPath(mount, kind, path), { versions });
  const metadata = meta.data?.metadata;
  const go = (next: string) => navigate(kvHref(mount.path, path, next), { replace: true });
  return (
    <Page title={`${mount.path}${path}`}>
      <KvBreadcrumbs mountPath={mount.path} path={path} />
      <div class="tabs" role="tablist" aria-label="Secret">
        {tabs.map(([id, label]) => (
          <button
            key={id}
            type="button"
            role="tab"
            aria-selected={tab === id}
            onClick={() => go(id === 'secret' ? (asked ? `version=${asked}` : '') : `tab=${id}`)}
          >
            {label}
          </button>
        ))}
      </div>
      {done ? (
        <p class="success" role="status">
          {done}
        </p>
      ) : null}
      <ErrorBox error={action.error} />
      {tab === 'versions' ? (
        <Loading loaded={meta}>
          {({ metadata: found, error }) =>
            found ? (
              <KvVersions
                metadata={found}
                busy={action.busy}
                href={(version) => kvHref(mount.path, path, `version=${version}`)}
                onAct={(kind, versions) =>
                  act(`Version${versions.length > 1 ? 's' : ''} ${versions.join(', ')} ${pastTense[kind]}.`, () =>
                    versionsCall(kind, versions),
                  )
                }
              />
            ) : (
              <ErrorBox error={error} />
            )
          }
        </Loading>
      ) : tab === 'metadata' ? (
        <Loading loaded={meta}>
          {({ metadata: found, error }) =>
            found ? (
              <KvMetadataForm
                metadata={found}
                onSave={async (changes) => {
                  setDone('');
                  await secrets('POST', kvMetadataPath(mount, path), changes);
                  setDone('Metadata saved.');
                  reload();
                }}
              />
            ) : (
              <ErrorBox error={error} />
            )
          }
        </Loading>
      ) : editing ? (
        <KvEditor
          initial={read.data?.data ?? {}}
          submitLabel="Save new version"
          cas={{
            required: metadata?.cas_required ?? false,
            current: metadata?.current_version ?? read.data?.metadata.version ?? 0,
          }}
          onCancel={() => setEditing(false)}
          onSave={async (data, cas) => {
            setDone('');
            const answer = await secrets<{ data?: { version?: number } }>('POST', kvDataPath(mount, path), {
              data,
              ...(cas === undefined ? {} : { options: { cas } }),
            });
            setEditing(false);
            setDone(`Version ${answer?.data?.version ?? ''} saved.`);
            if (asked) go('');
            reload();
          }}
        />
      ) : (
        <Loading loaded={read}>
          {({ data, metadata: version }) => {
            const latest = !asked || asked === metadata?.current_version;
            const deleted = isDeleted(version);
            return (
              <section class="panel">
                <h2>
                  Version {version.version}{' '}
                  {version.destroyed ? (
                    <span class="badge bad">destroyed</span>
                  ) : deleted ? (
                    <span class="badge bad">deleted</span>
                  ) : latest ? (
                    <span class="badge good">current</span>
                  ) : null}
                </h2>
                <p class="note">Created {timeText(version.created_time)}</p>
                {data ? (
                  <SecretData data={data} />
                ) : (
                  <p class="note">
                    This version's data is{' '}
                    {version.destroyed ? 'destroyed for good' : 'deleted; undelete it to read it'}.
                  </p>
                )}
                <div class="actions">
                  <button type="button" onClick={() => setEditing(true)}>
                    Create new version
                  </button>
                  {deleted ? (
                    <button
                      type="button"
                      class="secondary"
                      disabled={action.busy}
                      onClick={() =>
                        act(`Version ${version.version} undeleted.`, () => versionsCall('undelete', [version.version]))
                      }
                    >
                      Undelete version {version.version}
                    </button>
                  ) : version.destroyed ? null : latest && !asked ? (
                    <button
                      type="button"
                      class="secondary"
                      disabled={action.busy}
                      onClick={() =>
                        act(`Version ${version.version} deleted.`, () => secrets('DELETE', kvDataPath(mount, path)))
                      }
                    >
                      Delete latest version
                    </button>
                  ) : (
                    <button
                      type="button"
                      class="secondary"
                      disabled={action.busy}
                      onClick={() =>
                        act(`Version ${version.version} deleted.`, () => versionsCall('delete', [version.version]))
                      }
                    >
                      Delete version {version.version}
                    </button>
                  )}
                  {version.destroyed ? null : (
                    <ConfirmButton
                      label={`Destroy version ${version.version}`}
                      question={`Destroy version ${version.version} for good?`}
                      disabled={action.busy}
                      onConfirm={() =>
                        act(`Version ${version.version} destroyed.`, () => versionsCall('destroy', [version.version]))
                      }
                    />
                  )}
                </div>
              </section>
            );
          }}
        </Loading>
      )}
    </Page>
  );
}
