import { FitAddon } from '@xterm/addon-fit';
import { Terminal as Xterm } from '@xterm/xterm';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Signed } from '../app.tsx';
import { ErrorNote, Section } from '../components.tsx';

/** Input a single stdin request carries at most (the API's bound). */
const maxChunk = 64 * 1024;

/**
 * A terminal in the sandbox: an interactive shell on a pty (POST .../processes with `pty`), its output
 * read by attaching (taken again when an attach's stream reaches its time limit), the keyboard's input
 * written to its stdin in order, and the widget's size sent as the pty's.
 */
export function Terminal({ signed, id }: { signed: Signed; id: string }) {
  const [open, setOpen] = useState(false);
  return (
    <Section title="Terminal">
      {open ? (
        <TerminalSession signed={signed} id={id} onClose={() => setOpen(false)} />
      ) : (
        <button type="button" onClick={() => setOpen(true)}>
          Open a terminal
        </button>
      )}
    </Section>
  );
}

function TerminalSession({ signed, id, onClose }: { signed: Signed; id: string; onClose: () => void }) {
  const { client } = signed;
  const host = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<unknown>(undefined);
  const [ended, setEnded] = useState<string | null>(null);
  useEffect(() => {
    if (host.current === null) return;
    const terminal = new Xterm({ convertEol: false, cursorBlink: true, screenReaderMode: true });
    const fit = new FitAddon();
    terminal.loadAddon(fit);
    terminal.open(host.current);
    fit.fit();
    const stop = new AbortController();
    let sending: Promise<unknown> = Promise.resolve();
    const send = (work: () => Promise<unknown>) => {
      sending = sending.then(work).catch((failed: unknown) => setError(failed));
    };
    const encoder = new TextEncoder();
    let shell: number | undefined;
    void (async () => {
      try {
        const started = await client.startProcess(id, {
          args: [
            '/bin/sh',
            '-c',
            'if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi',
          ],
          pty: { cols: terminal.cols, rows: terminal.rows },
        });
        const { pid } = started;
        shell = pid;
        terminal.onData((data) => {
          const bytes = encoder.encode(data);
          for (let at = 0; at < bytes.length; at += maxChunk)
            send(() => client.writeStdin(id, pid, bytes.subarray(at, at + maxChunk)));
        });
        terminal.onResize((size) => send(() => client.resizeProcess(id, pid, size)));
        terminal.focus();
        for (;;) {
          let final: string | null = null;
          for await (const line of client.attachProcess(id, pid, { signal: stop.signal })) {
            if ('stream' in line) terminal.write(line.data);
            else if ('exitCode' in line) final = `exited with code ${line.exitCode}`;
            else if ('error' in line) final = `${line.error.code}: ${line.error.message}`;
          }
          if (final !== null || stop.signal.aborted) {
            setEnded(final);
            return;
          }
        }
      } catch (failed) {
        if (!stop.signal.aborted) setError(failed);
      }
    })();
    const resized = () => fit.fit();
    window.addEventListener('resize', resized);
    return () => {
      window.removeEventListener('resize', resized);
      stop.abort();
      terminal.dispose();
      // Closing the terminal ends its shell: nothing is left running that no one can see.
      if (shell !== undefined) void client.signalProcess(id, shell, 'SIGHUP').catch(() => undefined);
    };
  }, [client, id]);
  return (
    <>
      <div class="terminal" ref={host} data-terminal="" />
      <ErrorNote error={error} />
      {ended !== null && <p role="status">The shell {ended}.</p>}
      <button type="button" onClick={onClose}>
        Close the terminal
      </button>
    </>
  );
}
