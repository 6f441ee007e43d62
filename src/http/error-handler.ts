// One error handler: every failure leaves as {detail, error_code} with a registered code; 5xx internals stay in the log.
import { type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorCode, errorChain, isRetryable } from '../errors.ts';

export interface ErrorReply {
  status: number;
  body: { detail: string; error_code: ErrorCode };
}

const BY_STATUS: Record<number, ErrorCode> = {
  401: 'UNAUTHORIZED',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  412: 'PRECONDITION_FAILED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
};

function reply(code: ErrorCode, detail: string): ErrorReply {
  return { status: new AppError(code, detail).status, body: { detail, error_code: code } };
}

/** Maps anything thrown while handling a request (ours, Fastify's, a driver's) to the reply the client sees. */
export function toErrorReply(error: unknown, bodyLimit: number): ErrorReply {
  if (error instanceof AppError) return { status: error.status, body: error.toBody() };
  const { code, statusCode, message } = (error ?? {}) as { code?: unknown; statusCode?: unknown; message?: unknown };
  switch (code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return reply('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be sent with Content-Type: application/json.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return reply('PAYLOAD_TOO_LARGE', `The request body is larger than the limit of ${bodyLimit} bytes.`);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return reply('VALIDATION_ERROR', 'The request body is empty; send a JSON object.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return reply('VALIDATION_ERROR', 'The Content-Length header does not match the body.');
    case 'FST_ERR_BAD_URL':
      return reply('VALIDATION_ERROR', 'The request path is not valid percent-encoded UTF-8.');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return reply('VALIDATION_ERROR', `A path segment is longer than ${MAX_PARAM_LENGTH} characters.`);
  }
  // Only the auth hook refuses a scope (an AppError): a library's 403 (the docs' static files refusing a path that leaves
  // their folder) names nothing that can be served.
  if (statusCode === 403) return reply('NOT_FOUND', 'No such resource.');
  // Fastify's own client errors carry a safe message and a 4xx status.
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    return reply(BY_STATUS[statusCode] ?? 'VALIDATION_ERROR', typeof message === 'string' && message !== '' ? message : 'Bad request.');
  }
  if (isRetryable(error)) return reply('UNAVAILABLE', 'A dependency is unavailable; try again later.');
  return reply('INTERNAL_ERROR', 'Internal server error.');
}

/** Longest path parameter routed (ids run to 200 characters); Fastify answers longer ones before any route or hook. */
export const MAX_PARAM_LENGTH = 512;

/**
 * Fastify's `frameworkErrors` option: errors it meets before routing (a bad URL, an over-long parameter) in our shape;
 * `answered` learns of each reply, since these skip the hooks that count requests.
 */
export function frameworkErrorReplier(bodyLimit: number, answered?: (method: string, status: number, seconds: number) => void) {
  return (error: unknown, request: FastifyRequest, response: FastifyReply): void => {
    const { status, body } = toErrorReply(error, bodyLimit);
    response.code(status).type('application/json').send(body);
    answered?.(request.method, status, response.elapsedTime / 1_000);
  };
}

/**
 * Node's `clientError`: a request that is not valid HTTP, whose headers overflow, or that arrives too slowly never
 * reaches Fastify's handlers, so it is answered here, in our shape, before the connection closes.
 */
export function clientErrorReplier(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const { status, body } =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? reply('REQUEST_TIMEOUT', 'The request was not received in full in time.')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? reply('HEADERS_TOO_LARGE', 'The request headers are larger than the server accepts.')
        : reply('VALIDATION_ERROR', 'The request is not valid HTTP/1.1.');
  const answer = () => {
    if (socket.writable) socket.write(rawReply(status, body));
    socket.destroy(error);
  };
  // Requests pipelined before the bad one are still being answered: their own replies go first, then this one.
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') answer();
  else afterPendingReplies(socket, answer);
}

/**
 * Runs `then` once the socket's responses are all sent. Node writes the replies to pipelined requests one at a time,
 * handing the socket to the next queued one as each finishes (before listeners added later hear of it).
 */
function afterPendingReplies(socket: Socket, then: () => void): void {
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (!inFlight || inFlight.writableFinished || socket.destroyed) {
    then();
    return;
  }
  let settled = false;
  const next = () => {
    if (settled) return;
    settled = true;
    afterPendingReplies(socket, then);
  };
  inFlight.once('finish', next);
  inFlight.once('close', next);
}

/** A whole HTTP/1.1 reply in our shape, for a socket Node hands over without a response object; the connection closes. */
function rawReply(status: number, body: ErrorReply['body']): string {
  const text = JSON.stringify(body);
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(text)}\r\n` +
    `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${text}`
  );
}

/**
 * Requests Node answers by itself unless told otherwise: an `Expect` other than 100-continue (a bare 417) is served as
 * if it were absent, which RFC 9110 allows; CONNECT (the connection dropped without a word) is a route that does not
 * exist.
 */
export function answerUnroutedRequests(server: Server): void {
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => server.emit('request', request, response));
  server.on('connect', (request: IncomingMessage, socket: Socket) => {
    // After the replies to requests pipelined before it; handed over, the socket is out of the server's timeouts, so it
    // is closed once the reply is out, whatever the client does.
    afterPendingReplies(socket, () => socket.end(rawReply(404, routeNotFound('CONNECT', request.url ?? '')), () => socket.destroy()));
  });
}

/** The 404 of a method and URL no route serves, named without its query string. */
function routeNotFound(method: string, url: string): ErrorReply['body'] {
  return { detail: `Route ${method} ${url.split('?', 1)[0]} does not exist.`, error_code: 'NOT_FOUND' };
}

export function registerErrorHandling(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler((error, request, response) => {
    // Fastify asks a QUERY for its Content-Type before it knows no route serves it: the answer is that none does.
    if (request.is404 && (error as { code?: unknown }).code === 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE') {
      return response.code(404).send(routeNotFound(request.method, request.url));
    }
    const { status, body } = toErrorReply(error, bodyLimit);
    // A dependency away is a state the readiness check reports, not a fault: one line each, no stack, the cause named.
    if (status === 503) request.log.warn({ error_code: body.error_code, detail: body.detail, cause: causeOf(error) }, 'request refused');
    else if (status >= 500) request.log.error({ err: error, error_code: body.error_code }, 'request failed');
    else request.log.debug({ error_code: body.error_code, detail: body.detail }, 'request rejected');
    return response.code(status).type('application/json').send(body);
  });
  app.setNotFoundHandler((request, response) => response.code(404).send(routeNotFound(request.method, request.url)));
}

/** What an error wraps, every link of it ("could not connect to the database: connect ECONNREFUSED ..."), if anything. */
function causeOf(error: unknown): string | undefined {
  const causes = error instanceof Error ? errorChain(error.cause) : [];
  return causes.length === 0 ? undefined : causes.join(': ');
}
