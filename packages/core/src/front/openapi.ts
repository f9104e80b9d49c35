/**
 * The one OpenAPI 3.1 builder of both services: the document's skeleton (version, info, servers, security schemes,
 * the default security, paths) and the conversions both need (a zod schema as JSON Schema, a parameter). Each
 * service contributes its paths: the secrets service from its backends' path rows (`secrets/framework/openapi.ts`,
 * under each mount), the scheduler from its route table (`scheduler/http/openapi.ts`).
 */
import { type $ZodType, toJSONSchema } from 'zod/v4/core';

export type JsonSchema = Record<string, unknown>;

export interface OpenApiParameter {
  name: string;
  in: 'path' | 'query';
  required: boolean;
  description?: string;
  schema: JsonSchema;
}

export type SecurityScheme =
  | { type: 'apiKey'; in: 'header'; name: string; description: string }
  | { type: 'http'; scheme: 'bearer'; description: string };

export interface OpenApiDocument<PathItem> {
  openapi: '3.1.0';
  info: { title: string; description: string; version: string };
  servers?: Array<{ url: string }>;
  components: { securitySchemes: Record<string, SecurityScheme> };
  security?: Array<Record<string, string[]>>;
  paths: Record<string, PathItem>;
}

/** What a service puts in its document besides the paths. */
export interface OpenApiService {
  title: string;
  description: string;
  version: string;
  /** The URL prefix every path is under (the secrets service's `/v1`); none: paths are absolute. */
  servers?: Array<{ url: string }>;
  securitySchemes: Record<string, SecurityScheme>;
  /** The security of an operation that states none. */
  security?: Array<Record<string, string[]>>;
}

/** The document of a service and its paths. */
export function openApiDocument<PathItem>(
  service: OpenApiService,
  paths: Record<string, PathItem>,
): OpenApiDocument<PathItem> {
  return {
    openapi: '3.1.0',
    info: { title: service.title, description: service.description, version: service.version },
    ...(service.servers ? { servers: service.servers } : {}),
    components: { securitySchemes: service.securitySchemes },
    ...(service.security ? { security: service.security } : {}),
    paths,
  };
}

/** A zod schema as the JSON Schema of what a client sends (zod's input side), without the dialect line. */
export function jsonSchemaOf(schema: $ZodType): JsonSchema {
  const { $schema: _dialect, ...rest } = toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  return rest;
}

/** A parameter from its JSON Schema: the schema's description becomes the parameter's (`fallback` when it has none). */
export function parameterOf(
  name: string,
  where: 'path' | 'query',
  required: boolean,
  schema: JsonSchema,
  fallback?: string,
): OpenApiParameter {
  const { description, ...shape } = schema;
  const text = typeof description === 'string' ? description : fallback;
  return { name, in: where, required, ...(text === undefined ? {} : { description: text }), schema: shape };
}
