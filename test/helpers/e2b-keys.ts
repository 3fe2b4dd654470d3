import * as z from 'zod';

const keyAnswer = z.object({ key: z.string(), e2bApiKey: z.string().regex(/^e2b_[0-9a-f]+$/) });

/** A new org and a key for it, through the admin API: the key and its E2B shape (`e2bApiKey`). */
export async function orgKey(
  e: { url: string; adminKey: string },
  name: string,
): Promise<z.infer<typeof keyAnswer>> {
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${e.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${e.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return (await response.json()) as unknown;
  };
  const org = z.object({ id: z.string() }).parse(await post('/v1/admin/orgs', { name }));
  return keyAnswer.parse(await post(`/v1/admin/orgs/${org.id}/keys`, { name }));
}

/** Points the E2B SDKs (both URLs, as docs/e2b.md says) at a runtime's facade. */
export function pointE2bAt(url: string): void {
  process.env.E2B_API_URL = `${url}/e2b`;
  process.env.E2B_SANDBOX_URL = `${url}/e2b`;
}
