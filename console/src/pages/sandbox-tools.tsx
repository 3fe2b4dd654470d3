import { useRef, useState } from 'preact/hooks';
import type { Signed } from '../app.tsx';
import { ErrorNote, Section, Table, visibleText } from '../components.tsx';
import { useAction, useLoad } from '../hooks.ts';

interface OutputLine {
  stream: 'stdout' | 'stderr' | 'exit' | 'error';
  text: string;
}

/** Runs a shell command in the sandbox and shows its output as it streams (exec with ?stream=true). */
export function CommandRunner({ signed, id }: { signed: Signed; id: string }) {
  const [command, setCommand] = useState('');
  const [lines, setLines] = useState<OutputLine[]>([]);
  const action = useAction();
  const run = (event: Event) => {
    event.preventDefault();
    setLines([]);
    void action.run(async () => {
      for await (const line of signed.client.execStream(id, { command })) {
        const next: OutputLine =
          'stream' in line
            ? { stream: line.stream, text: line.data }
            : 'exitCode' in line
              ? { stream: 'exit', text: `exit code ${line.exitCode}` }
              : { stream: 'error', text: `${line.error.code}: ${line.error.message}` };
        setLines((shown) => [...shown, next]);
      }
    });
  };
  return (
    <Section title="Run a command">
      <form class="inline" onSubmit={run}>
        <label for="command">Command</label>
        <input
          id="command"
          class="wide"
          value={command}
          onInput={(event) => setCommand((event.target as HTMLInputElement).value)}
          placeholder="ls -la /"
        />
        <button type="submit" disabled={action.busy || command.trim() === ''}>
          Run
        </button>
      </form>
      <ErrorNote error={action.error} />
      <pre class="output" role="log" aria-live="polite" aria-label="Command output">
        {lines.map((line, index) => (
          // Output lines have no identity but their order.
          <span key={index} class={`out-${line.stream}`}>
            {line.stream === 'exit' || line.stream === 'error'
              ? `\n[${line.text}]\n`
              : visibleText(line.text)}
          </span>
        ))}
      </pre>
    </Section>
  );
}

/** The largest upload the console sends: a request body the API takes (Lambda's 6 MB, base64 aside). */
const maxUploadBytes = 4 * 1024 * 1024;

/** A folder of the sandbox: its entries, a download of each file, an upload into it. */
export function FileBrowser({ signed, id }: { signed: Signed; id: string }) {
  const { client } = signed;
  const [path, setPath] = useState('/');
  const [shown, setShown] = useState('/');
  const listing = useLoad(() => client.listFiles(id, shown), [id, shown]);
  const action = useAction();
  const upload = useRef<HTMLInputElement>(null);
  const download = (file: string, name: string) =>
    action.run(async () => {
      const bytes = await client.readFile(id, file);
      const url = URL.createObjectURL(new Blob([bytes as BlobPart]));
      const link = document.createElement('a');
      link.href = url;
      link.download = name;
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    });
  const send = (event: Event) => {
    event.preventDefault();
    const file = upload.current?.files?.[0];
    if (file === undefined) return;
    void action.run(async () => {
      if (file.size > maxUploadBytes)
        throw new Error(
          `${file.name} is ${file.size} bytes: the console uploads up to ${maxUploadBytes} bytes`,
        );
      const target = `${shown.replace(/\/+$/, '')}/${file.name}`;
      await client.writeFile(id, target, new Uint8Array(await file.arrayBuffer()));
      listing.reload();
    });
  };
  return (
    <Section title="Files">
      <form
        class="inline"
        onSubmit={(event) => {
          event.preventDefault();
          setShown(path);
        }}
      >
        <label for="folder">Folder</label>
        <input
          id="folder"
          value={path}
          onInput={(event) => setPath((event.target as HTMLInputElement).value)}
        />
        <button type="submit">List</button>
      </form>
      <ErrorNote error={listing.error} />
      <ErrorNote error={action.error} />
      <Table caption={`Entries of ${shown}`} columns={['Name', 'Size', 'Modified', '']}>
        {(listing.value?.items ?? []).map((entry) => (
          <tr key={entry.path} data-file={entry.name}>
            <td>
              {entry.isDir ? (
                <button
                  type="button"
                  class="link"
                  onClick={() => {
                    setPath(entry.path);
                    setShown(entry.path);
                  }}
                >
                  {entry.name}/
                </button>
              ) : (
                entry.name
              )}
            </td>
            <td>{entry.isDir ? '' : entry.size}</td>
            <td>{entry.modifiedAt ?? ''}</td>
            <td>
              {!entry.isDir && (
                <button type="button" onClick={() => void download(entry.path, entry.name)}>
                  Download <span class="visually-hidden">{entry.name}</span>
                </button>
              )}
            </td>
          </tr>
        ))}
      </Table>
      <form class="inline" onSubmit={send}>
        <label for="upload">Upload into {shown}</label>
        <input id="upload" type="file" ref={upload} />
        <button type="submit" disabled={action.busy}>
          Upload
        </button>
      </form>
    </Section>
  );
}
