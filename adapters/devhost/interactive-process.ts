import { constants } from 'node:os';
import type { ProcessSignal, TerminalSize } from '../../lib/adapter/processes.ts';
import type { ProcessDriver, TrackedProcess } from '../process-table.ts';
import { type SpawnLaunch, spawnInOwnGroup } from './jailed-spawn.ts';
import { frame, frameTypes, processHelperSource } from './process-helper.ts';

/** As an exec would start it (argv: the jail's bwrap, or the helper itself unjailed; see helperArgv). */
export interface InteractiveLaunch extends SpawnLaunch {
  timeoutSeconds: number;
}

/** The command under the helper: what the jail (or the host, unjailed) runs for an interactive process. */
export function helperArgv(pty: TerminalSize | undefined, command: string[]): string[] {
  return [
    'python3',
    '-c',
    processHelperSource,
    pty === undefined ? 'pipe' : 'pty',
    String(pty?.cols ?? 0),
    String(pty?.rows ?? 0),
    '--',
    ...command,
  ];
}

/**
 * Starts one interactive process under the helper (adapters/devhost/process-helper.ts), in its own
 * process group so a kill ends the jail and everything in it. Every input, resize and signal is a frame
 * on the helper's stdin; `onExit` is called once with the exit code (124 after the timeout, as exec's).
 */
export function launchInteractive(
  launch: InteractiveLaunch,
  process_: TrackedProcess,
  onExit: (exitCode: number) => void,
): ProcessDriver {
  const { child, kill } = spawnInOwnGroup(launch);
  let exited = false;
  let timedOut = false;
  const killGroup = () => {
    // Closing the helper's channel also kills the command from inside the jail (the helper's own rule).
    child.stdin.destroy();
    kill();
  };
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup();
  }, launch.timeoutSeconds * 1000);
  timer.unref();
  const finish = (exitCode: number) => {
    if (exited) return;
    exited = true;
    clearTimeout(timer);
    onExit(timedOut ? 124 : exitCode);
  };
  child.stdout.setEncoding('utf8').on('data', (data: string) => process_.output({ stream: 'stdout', data }));
  child.stderr.setEncoding('utf8').on('data', (data: string) => process_.output({ stream: 'stderr', data }));
  child.stdin.on('error', () => undefined);
  child.on('error', (error) => {
    process_.output({ stream: 'stderr', data: `cannot start the process: ${error.message}\n` });
    finish(127);
  });
  child.on('close', (code, signal) => {
    finish(code ?? (signal !== null ? 128 + (constants.signals[signal] ?? 0) : 1));
  });
  const send = (type: number, payload?: Uint8Array) => {
    if (!exited && child.stdin.writable) child.stdin.write(frame(type, payload));
  };
  return {
    write: (data) => send(frameTypes.data, data),
    pendingInput: () => child.stdin.writableLength,
    closeStdin: () => send(frameTypes.end),
    resize: (size) => send(frameTypes.resize, Buffer.from(`${size.cols} ${size.rows}`)),
    signal: (signal: ProcessSignal) =>
      send(frameTypes.signal, Buffer.from(String(constants.signals[signal]))),
    pauseOutput: () => {
      child.stdout.pause();
      child.stderr.pause();
    },
    resumeOutput: () => {
      child.stdout.resume();
      child.stderr.resume();
    },
    kill: killGroup,
  };
}
