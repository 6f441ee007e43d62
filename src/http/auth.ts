// API keys and scopes: who may call which route. Keys are compared as SHA-256 digests in constant time.
import { hash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKey, ApiScope } from '../config.ts';
import { AppError } from '../errors.ts';

/** What a route needs: `public` is open even with authentication on; `admin` keys may call everything. */
export type RouteScope = 'public' | ApiScope;

export interface Principal {
  /** The key's name, recorded as the audit actor; never the key itself. */
  readonly name: string;
  readonly scope: ApiScope;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Scope a caller needs; a route without one needs admin. */
    scope?: RouteScope;
  }
  interface FastifyRequest {
    principal: Principal;
  }
}

export const ANONYMOUS: Principal = Object.freeze({ name: 'anonymous', scope: 'admin' });

// One-shot hash: a third cheaper than a Hash object, and this runs on every authenticated request.
const digest = (text: string): Buffer => hash('sha256', text, 'buffer');

export class ApiKeyVerifier {
  readonly #keys: { digest: Buffer; principal: Principal }[];

  constructor(keys: readonly ApiKey[]) {
    this.#keys = keys.map((key) => ({ digest: digest(key.key), principal: { name: key.name, scope: key.scope } }));
  }

  /** The principal owning the presented key, or undefined. Every key is compared, so timing does not reveal which matched. */
  identify(presented: string): Principal | undefined {
    const candidate = digest(presented);
    let found: Principal | undefined;
    for (const key of this.#keys) {
      if (timingSafeEqual(candidate, key.digest)) found = key.principal;
    }
    return found;
  }
}

/** The key from `Authorization: Bearer <key>` or, failing that, `X-API-Key`. */
export function presentedKey(request: Pick<FastifyRequest, 'headers'>): string | undefined {
  const authorization = request.headers.authorization;
  if (typeof authorization === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match?.[1] !== undefined) return match[1];
  }
  const header = request.headers['x-api-key'];
  return typeof header === 'string' && header.trim() !== '' ? header.trim() : undefined;
}

export function allows(principal: Principal, needed: RouteScope): boolean {
  return needed === 'public' || principal.scope === 'admin' || principal.scope === needed;
}

/** Routes without a configured scope need admin (fail closed); unknown routes under /api/ need any valid key. */
export function requiredScope(request: FastifyRequest): RouteScope | 'authenticated' {
  if (request.is404) return routedPath(request.url).startsWith('/api/') ? 'authenticated' : 'public';
  return request.routeOptions.config.scope ?? 'admin';
}

/**
 * The path a request is routed by, decoded as the router decodes it: an absolute-form target (`GET http://host/api/…`)
 * is routed by its path, and `/%61pi/…` reaches the `/api/` routes.
 */
function routedPath(url: string): string {
  let path = url;
  if (!url.startsWith('/')) {
    try {
      path = new URL(url).pathname;
    } catch {
      return url;
    }
  }
  try {
    // The router ends the path at `?` or `#`.
    return decodeURIComponent(path.split(/[?#]/, 1)[0]!);
  } catch {
    return path;
  }
}

/** Decides one request: sets its principal, or returns the error that refuses it. */
export type Authenticate = (request: FastifyRequest, reply: FastifyReply) => AppError | undefined;

const anonymous: Authenticate = (request) => {
  request.principal = ANONYMOUS;
  return undefined;
};

/**
 * Authentication on (keys given) or off (null: everyone is "anonymous" with every right). The caller runs the returned
 * function from its onRequest hook, so shutdown and authentication share one hook per request.
 */
export function registerAuth(app: FastifyInstance, keys: readonly ApiKey[] | null): Authenticate {
  app.decorateRequest('principal', null as unknown as Principal);
  if (keys === null) return anonymous;
  const verifier = new ApiKeyVerifier(keys);
  return (request, reply) => {
    const needed = requiredScope(request);
    if (needed === 'public') {
      request.principal = ANONYMOUS;
      return undefined;
    }
    const key = presentedKey(request);
    const principal = key === undefined ? undefined : verifier.identify(key);
    if (principal === undefined) {
      reply.header('www-authenticate', 'Bearer');
      return new AppError(
        'UNAUTHORIZED',
        key === undefined ? 'Send an API key as Authorization: Bearer <key> or X-API-Key.' : 'The API key is not valid.',
      );
    }
    if (needed !== 'authenticated' && !allows(principal, needed)) {
      return new AppError('FORBIDDEN', `The key "${principal.name}" has scope ${principal.scope}; this operation needs ${needed}.`);
    }
    request.principal = principal;
    return undefined;
  };
}
