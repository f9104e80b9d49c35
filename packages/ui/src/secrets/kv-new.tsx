import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { secrets } from '../api.ts';
import { Field, Page } from '../components.tsx';
import { navigate } from '../router.tsx';
import { KvBreadcrumbs } from './breadcrumbs.tsx';
import { KvEditor } from './kv-editor.tsx';
import { type KvMount, kvDataPath, kvHref } from './kv-mount.ts';

/** A new secret in a folder: its path and its data (v2 may ask for check-and-set 0: create only). */
export function KvNew({ mount, folder }: { mount: KvMount; folder: string }): JSX.Element {
  const [name, setName] = useState('');
  const save = async (data: Record<string, unknown>, cas: number | undefined) => {
    const path = `${folder}${name.trim().replace(/^\/+/, '')}`;
    if (!name.trim() || path.endsWith('/')) throw new Error('give the secret a path that does not end in "/"');
    const body = mount.version === 2 ? { data, ...(cas === undefined ? {} : { options: { cas } }) } : data;
    await secrets('POST', kvDataPath(mount, path), body);
    navigate(kvHref(mount.path, path));
  };
  return (
    <Page title={`New secret in ${mount.path}${folder}`}>
      <KvBreadcrumbs mountPath={mount.path} path={folder} />
      <KvEditor
        initial={{}}
        submitLabel="Save"
        {...(mount.version === 2 ? { cas: { required: false, current: 0 } } : {})}
        onSave={save}
        onCancel={() => navigate(kvHref(mount.path, folder))}
      >
        <Field
          label="Path of the secret"
          value={name}
          onInput={setName}
          required
          hint={`Under ${mount.path}${folder}; a "/" makes folders.`}
        />
      </KvEditor>
    </Page>
  );
}
