import type { ExecutionAdapter } from './port.ts';
import * as port from './port.ts';
import { isProcessHost } from './processes.ts';

/** The feature names a pool declares and placement matches (adapter specification section 3). */
export const features = {
  exec: 'exec',
  execStream: 'exec.stream',
  /** Interactive processes: input written after start, attach again, signals (lib/adapter/processes.ts). */
  execStdin: 'exec.stdin',
  /** Interactive processes in a terminal of their own, resizable. */
  execPty: 'exec.pty',
  /** Commands and processes as the sandbox's superuser when asked (`user: "root"`); otherwise its default user. */
  execRoot: 'exec.root',
  files: 'files',
  stopStart: 'lifecycle.stop-start',
  persistenceDisk: 'persistence.disk',
  pauseResume: 'lifecycle.pause-resume',
  snapshotsDisk: 'snapshots.disk',
  snapshotsMemory: 'snapshots.memory',
  fork: 'fork',
  portsExpose: 'ports.expose',
  ssh: 'ssh',
  pty: 'pty',
  gpu: 'gpu',
  /** A pool-wide egress policy fixed in the pool's config (OpenSandbox, Freestyle): not per sandbox. */
  egressControl: 'network.egress-control',
  /** Per sandbox (lib/network/policy.ts): the network, less the installation's deny-list. */
  egressAllow: 'network.egress.allow',
  /** Per sandbox: no network at all. */
  egressDeny: 'network.egress.deny',
  /** Per sandbox: only the addresses and CIDR ranges of an allow-list. */
  egressAllowlist: 'network.egress.allowlist',
  /** Per sandbox: only the domains (and their subdomains for `*.`) of an allow-list. */
  egressDomains: 'network.egress.domains',
  /** Per sandbox: an allow-list entry held to one port (`host:443`), not every port of the host. */
  egressPorts: 'network.egress.ports',
  archAmd64: 'arch.amd64',
  archArm64: 'arch.arm64',
  isolationMicrovm: 'isolation.microvm',
  isolationContainer: 'isolation.container',
  isolationNone: 'isolation.none',
} as const;

export type Feature = (typeof features)[keyof typeof features];
export const knownFeatures: ReadonlySet<string> = new Set(Object.values(features));

export function isKnownFeature(name: string): name is Feature {
  return knownFeatures.has(name);
}

/** Features backed by an optional interface; everything else is required or declaration-only. */
const interfaceOf: Partial<Record<Feature, (a: ExecutionAdapter) => boolean>> = {
  'exec.stream': port.isStreamer,
  'exec.stdin': isProcessHost,
  'exec.pty': isProcessHost,
  files: port.isFileSystem,
  'lifecycle.stop-start': port.isLifecycle,
  'persistence.disk': port.isLifecycle,
  'lifecycle.pause-resume': port.isPauser,
  'snapshots.disk': port.isSnapshotter,
  'snapshots.memory': port.isSnapshotter,
  fork: port.isSnapshotter,
  'ports.expose': port.isPortExposer,
};

/**
 * The features a pool really advertises: declared features minus those whose optional interface the
 * adapter does not implement. Declaration-only names (network.egress-control, ssh, pty, gpu, arch.*,
 * isolation.*) pass through as declared, as do names this build does not know.
 */
export function effectiveFeatures(adapter: ExecutionAdapter, declared: readonly string[]): string[] {
  const out: string[] = [];
  for (const name of declared) {
    const check = isKnownFeature(name) ? interfaceOf[name] : undefined;
    if ((check === undefined || check(adapter)) && !out.includes(name)) out.push(name);
  }
  return out;
}
