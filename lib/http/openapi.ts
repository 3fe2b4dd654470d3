import { errorEnvelopeSchema } from '../schemas/common.ts';
import * as z from '../zod.ts';
import { documentedStatuses } from './documented-statuses.ts';
import type { RouteDefinition } from './types.ts';

/** What each status the router adds by itself means. */
const statusDescriptions: Record<number, string> = {
  400: 'The request is not valid (path, query or body), or the body is not JSON',
  401: 'No key, or a key that is not valid',
  403: 'A key of the other kind (an organization key on an admin route, the admin key on an organization route)',
  404: "No such object in your organization (another organization's objects are 404 too)",
  409: 'The object is not in a state that allows this',
  413: 'The body is larger than this route takes',
  422: 'The pool or backend cannot do this',
  429: 'A quota or rate limit: retry later',
  500: 'An internal error (its cause is logged, never shown)',
  501: 'Not supported by this backend',
  503: 'The backend is unavailable: retry later',
};

type JsonSchema = Record<string, unknown>;

/** JSON Schema of a zod schema as OpenAPI 3.1 embeds it (no $schema of its own). */
function jsonSchema(schema: z.ZodMiniType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  return rest;
}

function parameters(schema: z.ZodMiniType | undefined, where: 'path' | 'query'): JsonSchema[] {
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
    for (const code of documentedStatuses(route)) {
      const status = String(code);
      const schema = code in route.responses ? route.responses[code] : errorEnvelopeSchema;
      if (schema === errorEnvelopeSchema) {
        // One error envelope for every route, described once.
        responses[status] = {
          description: statusDescriptions[code] ?? 'An error',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        };
      } else if (code === 204) {
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
            code < 400
              ? 'Success'
              : `${statusDescriptions[code] ?? 'An error'}, in the envelope {"error": {"code", "message", "details"}}`,
          content: {
            'application/json': { schema: jsonSchema(schema, 'output') },
            // A streamed answer of the same operation (exec with ?stream=1).
            ...(code < 300 &&
              route.streamResponse !== undefined && {
                [route.streamResponse.mediaType]: {
                  schema: {
                    type: 'string',
                    contentMediaType: route.streamResponse.mediaType,
                    description: route.streamResponse.description,
                  },
                },
              }),
          },
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
      // Public routes say so: the document's default is the bearer key.
      ...(route.auth === 'none' && { security: [] }),
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
    servers: [
      {
        url: '{baseUrl}',
        description: "The API's address: `npm start` prints it; a deployed stack's is its ApiUrl output",
        variables: { baseUrl: { default: 'http://127.0.0.1:8080' } },
      },
    ],
    security: [{ bearer: [] }],
    info: {
      title: 'Differently',
      version,
      description:
        'A sandbox control plane. Every error is {"error": {"code", "message", "details"}}; another organization\'s objects are 404.',
    },
    components: {
      schemas: {
        Error: {
          ...jsonSchema(errorEnvelopeSchema, 'output'),
          description:
            'Every error: {"error": {"code", "message", "details"}}, the code one of the seeds\' codes',
        },
      },
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
