import { apiVersion } from '../lib/control-plane.ts';
import { openApiDocument } from '../lib/http/openapi.ts';
import { declaredControlPlane } from './declared-routes.ts';

/** The API's OpenAPI document as committed in docs/openapi.json: built from the router's route table. */
export function currentOpenApiDocument(): Record<string, unknown> {
  return openApiDocument(declaredControlPlane().routes, apiVersion);
}

export function openApiText(): string {
  return `${JSON.stringify(currentOpenApiDocument(), null, 2)}\n`;
}
