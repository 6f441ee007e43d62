// API routes take only the query parameters and body they declare: anything else is refused, never silently ignored.
import type { preValidationHookHandler, RouteOptions } from 'fastify';
import { z } from 'zod';
import { AppError } from '../errors.ts';
import { declaresNoBody } from './json-body.ts';
import { withFastAccept } from './zod-compilers.ts';

/** The query string of a route that declares none; an empty one skips zod. */
const NO_QUERY = withFastAccept(z.strictObject({}), (query) => {
  for (const _ in query as object) return false;
  return true;
});

const refuseBody: preValidationHookHandler = (request, _reply, done) => {
  // Fastify never reads a GET or HEAD body, so the headers tell whether one was sent (chunked: perhaps, so refused);
  // a DELETE's was read, and an empty one parsed to nothing.
  const length = request.headers['content-length'];
  const unread = request.method === 'GET' || request.method === 'HEAD';
  const sent = unread && ((length !== undefined && !declaresNoBody(length)) || request.headers['transfer-encoding'] !== undefined);
  // Only an empty body parses to undefined: `null` was sent.
  if (request.body === undefined && !sent) {
    done();
    return;
  }
  done(new AppError('VALIDATION_ERROR', `body: ${request.method} ${request.routeOptions.url ?? request.url} takes no body.`));
};

/** An onRoute hook: routes without a query schema accept no parameters, routes without a body schema no body. */
export function refuseUndeclaredInput(route: RouteOptions): void {
  route.schema ??= {};
  route.schema.querystring ??= NO_QUERY;
  if (route.schema.body !== undefined) return;
  const declared = route.preValidation;
  route.preValidation = declared === undefined ? refuseBody : [refuseBody, ...(Array.isArray(declared) ? declared : [declared])];
}
