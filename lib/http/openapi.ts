import * as z from 'zod';
import type { RouteDefinition } from './types.ts';

type JsonSchema = Record<string, unknown>;

/** JSON Schema of a zod schema as OpenAPI 3.1 embeds it (no $schema of its own). */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  return rest;
}

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query'): JsonSchema[] {
  if (schema === undefined) return [];
  const object = jsonSchema(schema, 'input');
  const properties = (object.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((object.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    schema: property,
  }));
}

function operationId(route: RouteDefinition): string {
  const words = route.path
    .split('/')
    .filter((part) => part !== '' && part !== 'v1')
    .map((part) => (part.startsWith('{') ? `by-${part.slice(1, -1)}` : part));
  return [route.method.toLowerCase(), ...words]
    .join('-')
    .replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/**
 * The OpenAPI 3.1 document of a route table: generated from the very schemas the router validates and
 * checks responses with, so the document cannot drift from the code.
 */
export function openApiDocument(routes: readonly RouteDefinition[], version: string): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const responses: Record<string, JsonSchema> = {};
    for (const [status, schema] of Object.entries(route.responses)) {
      const code = Number(status);
      if (code === 204) {
        responses[status] = { description: 'No content' };
      } else if (schema === null || schema === undefined) {
        const raw = route.rawResponse ?? {
          mediaTypes: ['application/octet-stream'],
          description: 'The bytes of the file',
        };
        responses[status] = {
          description: raw.description,
          content: Object.fromEntries(
            raw.mediaTypes.map((type) => [type, { schema: { type: 'string', contentMediaType: type } }]),
          ),
        };
      } else {
        responses[status] = {
          description:
            code < 400 ? 'Success' : 'An error, in the envelope {"error": {"code", "message", "details"}}',
          content: { 'application/json': { schema: jsonSchema(schema, 'output') } },
        };
      }
    }
    const requestBody =
      route.rawBody !== undefined
        ? {
            required: true,
            content: {
              [route.rawBody.mediaType ?? 'application/octet-stream']: {
                schema: {
                  type: 'string',
                  contentMediaType: route.rawBody.mediaType ?? 'application/octet-stream',
                },
              },
            },
          }
        : route.body !== undefined
          ? { required: true, content: { 'application/json': { schema: jsonSchema(route.body, 'input') } } }
          : undefined;
    const operation: JsonSchema = {
      operationId: operationId(route),
      summary: route.summary,
      ...(route.auth !== 'none' && { security: [{ bearer: [] }] }),
      ...(route.auth === 'admin' && { tags: ['admin'] }),
      parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
      ...(requestBody !== undefined && { requestBody }),
      responses,
    };
    paths[route.path] ??= {};
    const item = paths[route.path];
    if (item !== undefined) item[route.method.toLowerCase()] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Differently',
      version,
      description:
        'A sandbox control plane. Every error is {"error": {"code", "message", "details"}}; another organization\'s objects are 404.',
    },
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An organization key (<key id>.<secret>) or the admin key',
        },
      },
    },
    paths,
  };
}
