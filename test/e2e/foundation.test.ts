import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import * as z from 'zod';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { parseConfig } from '../../lib/config.ts';
import { sandboxSchema } from '../../lib/schemas/sandboxes.ts';
import { client, expectError, waitFor } from '../helpers/http-client.ts';

const orgReply = z.object({ id: z.string() });
const keyReply = z.object({ id: z.string(), key: z.string() });
const execReply = z.object({
  exitCode: z.number(),
  stdout: z.string(),
  stderr: z.string(),
  truncated: z.boolean(),
});

describe.each(['memory', 'dynamodb'] as const)(
  'foundation flow over HTTP on the local runtime (%s store)',
  (storeKind) => {
    let runtime: LocalRuntime;
    let root: string;
    let api: ReturnType<typeof client>;
    let admin: string;
    let keyA: string;
    let keyAId: string;
    let keyB: string;

    beforeAll(async () => {
      root = await mkdtemp(join(tmpdir(), 'e2e-devhost-'));
      runtime = await startLocalRuntime({
        storeKind,
        dynamodbEndpoint: inject('dynamodbEndpoint'),
        config: parseConfig({
          devMode: true,
          pools: [
            { name: 'local', adapter: 'devhost', config: { root } },
            { name: 'fake', adapter: 'fake' },
          ],
        }),
      });
      api = client(runtime.url);
      admin = runtime.adminKey;
      const orgA = orgReply.parse((await api.post('/v1/admin/orgs', admin, { name: 'org-a' })).body);
      const orgB = orgReply.parse((await api.post('/v1/admin/orgs', admin, { name: 'org-b' })).body);
      const createdA = keyReply.parse(
        (await api.post(`/v1/admin/orgs/${orgA.id}/keys`, admin, { name: 'a' })).body,
      );
      keyA = createdA.key;
      keyAId = createdA.id;
      keyB = keyReply.parse(
        (await api.post(`/v1/admin/orgs/${orgB.id}/keys`, admin, { name: 'b' })).body,
      ).key;
    });

    afterAll(async () => {
      await runtime?.stop();
      await rm(root, { recursive: true, force: true });
    });

    it('answers health without a key', async () => {
      expect(await api.get('/v1/health')).toMatchObject({ status: 200, body: { status: 'ok' } });
    });

    it('creates a sandbox on pool local, runs commands in it, and terminates it', async () => {
      const created = await api.post('/v1/sandboxes', keyA, { placement: { allowedPools: ['local'] } });
      expect(created.status).toBe(202);
      const sandbox = sandboxSchema.parse(created.body);
      expect(sandbox.status).toBe('queued');

      const running = await waitFor(
        async () => sandboxSchema.parse((await api.get(`/v1/sandboxes/${sandbox.id}`, keyA)).body),
        (s) => s.status === 'running' || s.status === 'failed',
        'running',
      );
      expect(running).toMatchObject({ status: 'running', pool: 'local', placement: { pool: 'local' } });

      const hi = await api.post(`/v1/sandboxes/${sandbox.id}/exec`, keyA, { command: 'echo hi' });
      expect(hi.status).toBe(200);
      expect(execReply.parse(hi.body)).toMatchObject({ exitCode: 0, stdout: 'hi\n', stderr: '' });

      const three = await api.post(`/v1/sandboxes/${sandbox.id}/exec`, keyA, { command: 'exit 3' });
      expect(three.status).toBe(200);
      expect(execReply.parse(three.body).exitCode).toBe(3);

      // Another org's key sees nothing: get, exec and delete are all 404.
      expectError(await api.get(`/v1/sandboxes/${sandbox.id}`, keyB), 404, 'not_found');
      expectError(
        await api.post(`/v1/sandboxes/${sandbox.id}/exec`, keyB, { command: 'echo hi' }),
        404,
        'not_found',
      );
      expectError(await api.delete(`/v1/sandboxes/${sandbox.id}`, keyB), 404, 'not_found');
      const listB = await api.get('/v1/sandboxes', keyB);
      expect(listB.body).toEqual({ items: [], nextCursor: null });

      const deleted = await api.delete(`/v1/sandboxes/${sandbox.id}`, keyA);
      expect(deleted.status).toBe(202);
      expect(sandboxSchema.parse(deleted.body).status).toBe('terminating');
      const terminated = await waitFor(
        async () => sandboxSchema.parse((await api.get(`/v1/sandboxes/${sandbox.id}`, keyA)).body),
        (s) => s.status === 'terminated',
        'terminated',
      );
      expect(terminated.status).toBe('terminated');
      expectError(
        await api.post(`/v1/sandboxes/${sandbox.id}/exec`, keyA, { command: 'true' }),
        409,
        'invalid_state',
      );
    });

    it('never echoes env values and lists with filters', async () => {
      const created = sandboxSchema.parse(
        (await api.post('/v1/sandboxes', keyA, { env: { TOKEN: 'sekrit-value' }, labels: { team: 'x' } }))
          .body,
      );
      const fetched = await api.get(`/v1/sandboxes/${created.id}`, keyA);
      expect(fetched.text).not.toContain('sekrit-value');
      expect(sandboxSchema.parse(fetched.body).envKeys).toEqual(['TOKEN']);
      const byLabel = z
        .object({ items: z.array(sandboxSchema) })
        .parse((await api.get('/v1/sandboxes?label=team=x', keyA)).body);
      expect(byLabel.items.map((s) => s.id)).toEqual([created.id]);
    });

    describe('bad input is a 4xx with the envelope and a message that says what to fix', () => {
      it('missing key', async () => {
        const { error } = expectError(await api.get('/v1/sandboxes'), 401, 'unauthenticated');
        expect(error.message).toContain('Authorization: Bearer');
      });
      it('bad key', async () => {
        expectError(
          await api.get('/v1/sandboxes', 'key_01ARZ3NDEKTSV4RRFFQ69G5FAV.wrong'),
          401,
          'unauthenticated',
        );
        expectError(await api.get('/v1/sandboxes', `${keyA}x`), 401, 'unauthenticated');
        expectError(await api.get('/v1/sandboxes', 'garbage'), 401, 'unauthenticated');
      });
      it('org key on an admin route', async () => {
        expectError(await api.post('/v1/admin/orgs', keyA, { name: 'nope' }), 403, 'forbidden');
      });
      it('admin key on a tenant route', async () => {
        expectError(await api.get('/v1/sandboxes', admin), 403, 'forbidden');
      });
      it('malformed JSON', async () => {
        const { error } = expectError(
          await api.postRaw('/v1/sandboxes', keyA, '{"template":'),
          400,
          'invalid_request',
        );
        expect(error.message).toContain('not valid JSON');
      });
      it('unknown field', async () => {
        const { error } = expectError(
          await api.post('/v1/sandboxes', keyA, { tempalte: 'x' }),
          400,
          'invalid_request',
        );
        expect(error.message).toContain('tempalte: unknown field');
      });
      it('wrong type', async () => {
        const { error } = expectError(
          await api.post('/v1/sandboxes', keyA, { ttlSeconds: 'soon' }),
          400,
          'invalid_request',
        );
        expect(error.message).toContain('ttlSeconds');
      });
      it('reserved label prefix', async () => {
        const reply = await api.post('/v1/sandboxes', keyA, { labels: { 'differently.dev/org': 'other' } });
        expect(expectError(reply, 400, 'invalid_request').error.message).toContain('differently.dev/');
      });
      it('unknown capability and isolation.none', async () => {
        expectError(
          await api.post('/v1/sandboxes', keyA, { capabilities: ['teleport'] }),
          400,
          'invalid_request',
        );
        expectError(
          await api.post('/v1/sandboxes', keyA, { capabilities: ['isolation.none'] }),
          400,
          'invalid_request',
        );
      });
      it('unknown pool', async () => {
        const reply = await api.post('/v1/sandboxes', keyA, { placement: { allowedPools: ['nowhere'] } });
        expect(expectError(reply, 400, 'invalid_request').error.message).toContain('nowhere');
      });
      it('a sandbox id that is not one', async () => {
        expectError(await api.get('/v1/sandboxes/not-an-id', keyA), 400, 'invalid_request');
      });
      it('an unknown sandbox', async () => {
        expectError(await api.get('/v1/sandboxes/sbx_01ARZ3NDEKTSV4RRFFQ69G5FAV', keyA), 404, 'not_found');
      });
      it('exec with both command and args, or neither', async () => {
        const path = '/v1/sandboxes/sbx_01ARZ3NDEKTSV4RRFFQ69G5FAV/exec';
        expectError(await api.post(path, keyA, { command: 'a', args: ['b'] }), 400, 'invalid_request');
        expectError(await api.post(path, keyA, {}), 400, 'invalid_request');
      });
      it('a sync exec timeout beyond what the sync path serves points to the streamed form', async () => {
        const reply = await api.post('/v1/sandboxes/sbx_01ARZ3NDEKTSV4RRFFQ69G5FAV/exec', keyA, {
          command: 'sleep 100',
          timeoutSeconds: 100,
        });
        expect(expectError(reply, 400, 'invalid_request').error.message).toContain('stream=1');
      });
      it('an unknown route', async () => {
        expectError(await api.get('/v1/nothing-here', keyA), 404, 'not_found');
      });
      it('a body over the limit', async () => {
        const reply = await api.postRaw(
          '/v1/sandboxes',
          keyA,
          JSON.stringify({ template: 'x'.repeat(2 * 1024 * 1024) }),
        );
        expectError(reply, 413, 'payload_too_large');
      });
    });

    it('refuses a revoked key from its next call on', async () => {
      const org = orgReply.parse((await api.post('/v1/admin/orgs', admin, { name: 'org-c' })).body);
      const created = keyReply.parse(
        (await api.post(`/v1/admin/orgs/${org.id}/keys`, admin, { name: 'c' })).body,
      );
      expect((await api.get('/v1/sandboxes', created.key)).status).toBe(200);
      expect((await api.delete(`/v1/admin/keys/${created.id}`, admin)).status).toBe(200);
      const { error } = expectError(await api.get('/v1/sandboxes', created.key), 401, 'unauthenticated');
      expect(error.message).toContain('revoked');
    });

    it('never shows a key secret after creation', async () => {
      const orgs = z
        .object({ items: z.array(z.object({ id: z.string() })) })
        .parse((await api.get('/v1/admin/orgs', admin)).body);
      const secret = keyA.slice(keyA.indexOf('.') + 1);
      const listed: string[] = [];
      for (const { id } of orgs.items) {
        const keys = await api.get(`/v1/admin/orgs/${id}/keys`, admin);
        expect(keys.status).toBe(200);
        expect(keys.text).not.toContain(secret);
        expect(keys.text).not.toContain('secretHash');
        listed.push(
          ...z
            .object({ items: z.array(z.object({ id: z.string() })) })
            .parse(keys.body)
            .items.map((k) => k.id),
        );
      }
      expect(listed).toContain(keyAId);
    });

    it('honours Idempotency-Key: a repeat returns the first sandbox, another body is 409', async () => {
      const headers = {
        authorization: `Bearer ${keyA}`,
        'content-type': 'application/json',
        'idempotency-key': `k-${storeKind}`,
      };
      const send = (body: unknown) =>
        fetch(`${runtime.url}/v1/sandboxes`, { method: 'POST', headers, body: JSON.stringify(body) });
      const first = await send({ labels: { attempt: 'one' } });
      expect(first.status).toBe(202);
      const firstId = sandboxSchema.parse(await first.json()).id;
      const repeat = await send({ labels: { attempt: 'one' } });
      expect(repeat.status).toBe(202);
      expect(repeat.headers.get('idempotent-replayed')).toBe('true');
      expect(sandboxSchema.parse(await repeat.json()).id).toBe(firstId);
      const other = await send({ labels: { attempt: 'two' } });
      expect(other.status).toBe(409);
      expect(((await other.json()) as { error: { code: string } }).error.code).toBe('conflict');
    });

    it('runs a reconcile pass on request (admin only)', async () => {
      const reply = await api.post('/v1/admin/reconcile', admin);
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({ ran: true, pools: [{ pool: 'local' }, { pool: 'fake' }] });
      expectError(await api.post('/v1/admin/reconcile', keyA), 403, 'forbidden');
    });

    it('records changes in the org audit chain and verifies it', async () => {
      const page = z
        .object({ items: z.array(z.object({ seq: z.number(), action: z.string(), actor: z.string() })) })
        .parse((await api.get('/v1/audit?limit=100', keyA)).body);
      const actions = page.items.map((e) => e.action);
      expect(actions[0]).toBe('org.created');
      expect(actions).toContain('key.created');
      expect(actions).toContain('sandbox.created');
      expect(actions).toContain('sandbox.running');
      expect(actions).toContain('sandbox.terminated');
      expect(page.items.map((e) => e.seq)).toEqual(page.items.map((_, i) => i + 1));
      expect(page.items.find((e) => e.action === 'sandbox.terminating')?.actor).toBe(keyAId);
      const verified = await api.get('/v1/admin/audit/verify', admin);
      expect(verified.body).toMatchObject({ ok: true });
      expectError(await api.get('/v1/admin/audit/verify', keyA), 403, 'forbidden');
      expectError(
        await api.get('/v1/admin/audit/verify?orgId=org_01ARZ3NDEKTSV4RRFFQ69G5FAV', admin),
        404,
        'not_found',
      );
    });
  },
);
