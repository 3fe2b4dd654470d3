import type { DifferentlyClient } from './client.ts';

/** `name` or `group.name` for each method of T and of its method groups (the client's `admin`). */
type MethodPath<T> = {
  [K in keyof T & string]: T[K] extends (...args: never[]) => unknown
    ? K
    : T[K] extends object
      ? `${K}.${MethodPath<T[K]>}`
      : never;
}[keyof T & string];

/**
 * Every operation of the API (its operationId in docs/openapi.json, derived from the route table) and the
 * client method that calls it. The compiler checks that each named method exists; test/unit/sdk/
 * checks that the table names exactly the route table's operations, so a route added without a method
 * here fails it (the Python SDK has the same check: sdk/python/tests/test_openapi.py).
 */
export const sdkOperations = {
  getHealth: 'health',
  postSandboxes: 'createSandbox',
  getSandboxes: 'listSandboxes',
  getSandboxesById: 'getSandbox',
  patchSandboxesById: 'updateSandbox',
  deleteSandboxesById: 'deleteSandbox',
  postSandboxesByIdExec: 'exec',
  postSandboxesByIdStop: 'stop',
  postSandboxesByIdStart: 'start',
  postSandboxesByIdPause: 'pause',
  postSandboxesByIdResume: 'resume',
  getSandboxesByIdFiles: 'listFiles',
  getSandboxesByIdFilesContent: 'readFile',
  putSandboxesByIdFilesContent: 'writeFile',
  postSandboxesByIdFork: 'fork',
  postSandboxesByIdPorts: 'exposePort',
  postSandboxesByIdProcesses: 'startProcess',
  getSandboxesByIdProcesses: 'listProcesses',
  getSandboxesByIdProcessesByPid: 'getProcess',
  postSandboxesByIdProcessesByPidAttach: 'attachProcess',
  postSandboxesByIdProcessesByPidStdin: 'writeStdin',
  getSandboxesByIdProcessesByPidOutput: 'readProcessOutput',
  postSandboxesByIdProcessesByPidResize: 'resizeProcess',
  postSandboxesByIdProcessesByPidSignal: 'signalProcess',
  postSandboxesByIdSnapshots: 'createSnapshot',
  getSnapshots: 'listSnapshots',
  getSnapshotsById: 'getSnapshot',
  deleteSnapshotsById: 'deleteSnapshot',
  getUsage: 'usage',
  getTemplates: 'templates',
  getTrust: 'trust',
  getAudit: 'audit',
  'getOpenapi.json': 'openapi',
  postMcp: 'mcp',
  postAdminOrgs: 'admin.createOrg',
  getAdminOrgs: 'admin.listOrgs',
  getAdminOrgsById: 'admin.getOrg',
  putAdminOrgsByIdQuota: 'admin.setQuota',
  putAdminOrgsByIdBudget: 'admin.setBudget',
  putAdminOrgsByIdIdlePolicy: 'admin.setIdlePolicy',
  putAdminOrgsByIdNetworkPolicy: 'admin.setNetworkPolicy',
  postAdminOrgsByIdWebhooks: 'admin.createWebhook',
  getAdminOrgsByIdWebhooks: 'admin.listWebhooks',
  deleteAdminOrgsByIdWebhooksByWebhookId: 'admin.deleteWebhook',
  postAdminOrgsByIdWebhooksByWebhookIdRotateSecret: 'admin.rotateWebhookSecret',
  getAdminOrgsByIdWebhooksByWebhookIdDeliveries: 'admin.listWebhookDeliveries',
  getAdminOrgsByIdBudget: 'admin.getBudget',
  putAdminOrgsByIdProjectsByProjectIdBudget: 'admin.setProjectBudget',
  getAdminOrgsByIdProjectsByProjectIdBudget: 'admin.getProjectBudget',
  postAdminOrgsByIdKeys: 'admin.createKey',
  getAdminOrgsByIdKeys: 'admin.listKeys',
  deleteAdminKeysById: 'admin.revokeKey',
  postAdminKeysByIdRotate: 'admin.rotateKey',
  postAdminOrgsByIdProjects: 'admin.createProject',
  getAdminOrgsByIdProjects: 'admin.listProjects',
  getAdminPools: 'admin.listPools',
  postAdminPools: 'admin.createPool',
  getAdminPoolsByName: 'admin.getPool',
  patchAdminPoolsByName: 'admin.updatePool',
  deleteAdminPoolsByName: 'admin.deletePool',
  getAdminPolicy: 'admin.getPolicy',
  putAdminPolicy: 'admin.setPolicy',
  getAdminAuditVerify: 'admin.verifyAudit',
  postAdminReconcile: 'admin.reconcile',
} as const satisfies Record<string, MethodPath<DifferentlyClient>>;
