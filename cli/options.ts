/** Every option the CLI takes (parseArgs refuses any other). */
export const cliOptions = {
  endpoint: { type: 'string' },
  key: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean' },
  pool: { type: 'string', multiple: true },
  template: { type: 'string' },
  ttl: { type: 'string' },
  env: { type: 'string', multiple: true },
  label: { type: 'string', multiple: true },
  wait: { type: 'boolean' },
  status: { type: 'string' },
  cwd: { type: 'string' },
  timeout: { type: 'string' },
  out: { type: 'string' },
  kind: { type: 'string' },
  project: { type: 'string' },
  org: { type: 'string' },
  config: { type: 'string' },
  role: { type: 'string' },
  file: { type: 'string' },
  'allow-external': { type: 'boolean' },
  'external-pool': { type: 'string', multiple: true },
  cpu: { type: 'string' },
  memory: { type: 'string' },
  disk: { type: 'string' },
  profile: { type: 'string' },
  'from-snapshot': { type: 'string' },
  event: { type: 'string', multiple: true },
  egress: { type: 'string' },
  allow: { type: 'string', multiple: true },
} as const;

export interface CliOptions {
  endpoint?: string;
  key?: string;
  json?: boolean;
  help?: boolean;
  pool?: string[];
  template?: string;
  ttl?: string;
  env?: string[];
  label?: string[];
  wait?: boolean;
  status?: string;
  cwd?: string;
  timeout?: string;
  out?: string;
  kind?: string;
  project?: string;
  org?: string;
  config?: string;
  role?: string;
  file?: string;
  'allow-external'?: boolean;
  'external-pool'?: string[];
  cpu?: string;
  memory?: string;
  disk?: string;
  profile?: string;
  'from-snapshot'?: string;
  egress?: string;
  allow?: string[];
  event?: string[];
}
