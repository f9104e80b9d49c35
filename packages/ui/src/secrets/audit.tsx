import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, secrets, segments } from '../api.ts';
import { ErrorBox, Field, Loading, Page, Table, useAction, useLoad } from '../components.tsx';
import { ConfirmButton } from './confirm-button.tsx';
import { apiPath, parseOptions } from './paths.ts';

interface Device {
  type: string;
  description?: string;
  options?: Record<string, string>;
  path?: string;
}

/** `/ui/vault/audit`: the audit devices (`sys/audit`), enabling a file device, disabling one; refusals as the API words them. */
export function AuditPage(): JSX.Element {
  const loaded = useLoad(
    () => secrets<{ data: Record<string, Device> }>('GET', api`sys/audit`).then((answer) => answer.data ?? {}),
    [],
  );
  const [path, setPath] = useState('file');
  const [filePath, setFilePath] = useState('');
  const [description, setDescription] = useState('');
  const [options, setOptions] = useState('');
  const [done, setDone] = useState('');
  const action = useAction();
  const enable = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      setDone('');
      const devicePath = path.trim().replace(/^\/+|\/+$/g, '');
      await secrets('PUT', api`sys/audit/${segments(devicePath)}`, {
        type: 'file',
        description: description.trim(),
        options: { ...parseOptions(options), file_path: filePath.trim() },
      });
      setDone(`Audit device ${devicePath}/ enabled.`);
      loaded.reload();
    });
  };
  const disable = (devicePath: string) =>
    void action.run(async () => {
      setDone('');
      await secrets('DELETE', api`sys/audit/${segments(devicePath.replace(/\/+$/, ''))}`);
      setDone(`Audit device ${devicePath} disabled.`);
      loaded.reload();
    });
  return (
    <Page title="Audit devices">
      {done ? (
        <p class="success" role="status">
          {done}
        </p>
      ) : null}
      <ErrorBox error={action.error} />
      <Loading loaded={loaded}>
        {(devices) => (
          <Table
            columns={['Path', 'Type', 'Options', 'Description', '']}
            rows={Object.entries(devices).map(([devicePath, device]) => [
              <code>{devicePath}</code>,
              device.type,
              Object.entries(device.options ?? {})
                .map(([name, value]) => `${name}=${value}`)
                .join(', '),
              device.description || '',
              <ConfirmButton
                label={`Disable ${devicePath}`}
                question={`Disable audit device ${devicePath}?`}
                disabled={action.busy}
                onConfirm={() => disable(devicePath)}
              />,
            ])}
            empty="No audit devices are enabled."
          />
        )}
      </Loading>
      <form class="panel" onSubmit={enable} aria-label="Enable a file audit device">
        <h2>Enable a file audit device</h2>
        <div class="row">
          <Field label="Device path" value={path} onInput={setPath} required />
          <Field
            label="File path"
            value={filePath}
            onInput={setFilePath}
            required
            placeholder="/var/log/keyhaven/audit.log"
          />
        </div>
        <Field label="Description" value={description} onInput={setDescription} />
        <Field
          label="Other options"
          multiline
          rows={3}
          value={options}
          onInput={setOptions}
          hint="One name=value a line, e.g. log_raw=false or mode=0600."
        />
        <div class="actions">
          <button type="submit" disabled={action.busy}>
            Enable device
          </button>
        </div>
      </form>
    </Page>
  );
}
