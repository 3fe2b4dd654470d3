import { processCalls } from './processes.ts';

/** Every call of the contract that reaches a backend (`info()` is local and synchronous). */
export const backendCalls = [
  'capabilities',
  'capacity',
  'health',
  'create',
  'get',
  'list',
  'delete',
  'exec',
  'execStream',
  'readFile',
  'writeFile',
  'listFiles',
  'stop',
  'start',
  'pause',
  'resume',
  'snapshot',
  'deleteSnapshot',
  'extendTtl',
  'exposePort',
  'markActive',
  ...processCalls,
] as const;
export type BackendCall = (typeof backendCalls)[number];
