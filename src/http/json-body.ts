// JSON in and out: the only body parser (poisoning and nesting guards, so nothing recurses without bound), and ready JSON replies.
import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { nestsDeeperThan } from '../contracts/json-depth.ts';
import { hugeNumberProblem } from '../contracts/json-numbers.ts';
import { mayHoldPoisoningKey, poisoningKeyPath } from '../contracts/poisoning-keys.ts';
import { AppError } from '../errors.ts';

/** Deepest nesting any request body may have; facts have their own, lower limit (MAX_FACT_DEPTH). */
export const MAX_BODY_DEPTH = 128;

/**
 * Parses a JSON body. Like secure-json-parse with protoAction/constructorAction "error": an own `__proto__` key, or a
 * `constructor` object carrying `prototype`, is refused. Malformed JSON, poisoning, over-deep nesting and numbers a double
 * cannot hold (1e400) are VALIDATION_ERROR.
 */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') throw new AppError('VALIDATION_ERROR', 'The request body is empty; send a JSON object.');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new AppError('VALIDATION_ERROR', `The request body is not valid JSON: ${(error as Error).message}`);
  }
  const hugeNumber = hugeNumberProblem(text, value);
  if (hugeNumber !== undefined) throw new AppError('VALIDATION_ERROR', `The request body ${hugeNumber}.`);
  const suspiciousKeys = mayHoldPoisoningKey(text);
  // Every level of nesting takes two brackets, so a body this short cannot be too deep and needs no walk.
  if (text.length <= 2 * MAX_BODY_DEPTH && !suspiciousKeys) return value;
  const problem = inspectJson(value, MAX_BODY_DEPTH, suspiciousKeys);
  if (problem !== undefined) throw new AppError('VALIDATION_ERROR', problem);
  return value;
}

/**
 * Describes the first problem of a parsed body, walking it without recursion: nesting deeper than maxDepth levels (the
 * outermost object or array is level 1) or, when checkKeys is set, a prototype-poisoning key.
 */
export function inspectJson(root: unknown, maxDepth: number, checkKeys: boolean): string | undefined {
  if (nestsDeeperThan(root, maxDepth)) return `The request body is nested deeper than ${maxDepth} levels.`;
  if (!checkKeys) return undefined;
  const path = poisoningKeyPath(root);
  if (path === undefined) return undefined;
  // Poisoning keys are object keys, never array indices: the key is the path's last segment.
  return `The request body contains the forbidden key "${path.slice(path.lastIndexOf('.') + 1)}" at ${path}.`;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The JSON text the body was parsed from; null without a body. Lets a route record the request as it came. */
    bodyJson: string | null;
  }
}

/** Charsets whose text is UTF-8: JSON is UTF-8 (RFC 8259), and ASCII is a part of it. */
const UTF8_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii']);

/** The charset parameter of a Content-Type header, lower case; undefined when it names none. */
export function charsetOf(contentType: string): string | undefined {
  // Parameters are split at `;` outside quoted strings; a malformed one (`; foo`, `;;`) is skipped, not the end.
  let start = contentType.indexOf(';');
  if (start < 0) return undefined;
  let quoted = false;
  for (let i = start + 1; i <= contentType.length; i += 1) {
    const char = contentType[i];
    if (char === '\\' && quoted) i += 1;
    else if (char === '"') quoted = !quoted;
    else if ((char === ';' && !quoted) || i === contentType.length) {
      const parameter = contentType.slice(start + 1, i);
      start = i;
      const equals = parameter.indexOf('=');
      if (equals < 0 || parameter.slice(0, equals).trim().toLowerCase() !== 'charset') continue;
      const value = parameter.slice(equals + 1).trim();
      const charset = (
        value.startsWith('"') ? value.slice(1, value.endsWith('"') ? -1 : undefined).replace(/\\(.)/g, '$1') : value
      ).toLowerCase();
      return charset === '' ? undefined : charset;
    }
  }
  return undefined;
}

/** A body labelled with a charset other than UTF-8 would be decoded wrongly, so it is refused. */
function charsetProblem(contentType: string | undefined): AppError | undefined {
  const charset = charsetOf(contentType ?? '');
  if (charset === undefined || UTF8_CHARSETS.has(charset)) return undefined;
  return new AppError('UNSUPPORTED_MEDIA_TYPE', `Request bodies must be UTF-8 JSON; charset '${charset.slice(0, 40)}' is not supported.`);
}

/** Whether a Content-Length says there is no body: `0`, or any run of zeros (`00`), which HTTP reads the same. */
export function declaresNoBody(contentLength: string | undefined): boolean {
  return contentLength !== undefined && /^0+$/.test(contentLength);
}

/** What Fastify itself sends with a JSON body. */
const JSON_UTF8 = 'application/json; charset=utf-8';

/** Sends text that already is the reply's JSON (Fastify would otherwise send a string as text/plain). */
export function sendJsonText(reply: FastifyReply, json: string): void {
  reply.type(JSON_UTF8).send(json);
}

/** Replaces Fastify's parsers: application/json (UTF-8) is the only accepted body type; anything else is 415. */
export function registerJsonBody(app: FastifyInstance, bodyLimit: number): void {
  app.decorateRequest('bodyJson', null);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (request, body, done) => {
    const bytes = body as Buffer;
    // Clients that label every request as JSON send DELETEs with an empty body: nothing to parse where no body is taken;
    // nor on an unknown route, which is 404 whatever it was sent.
    if ((bytes.length === 0 && request.routeOptions.schema?.body === undefined) || request.is404) {
      done(null, undefined);
      return;
    }
    const charset = charsetProblem(request.headers['content-type']);
    if (charset !== undefined) {
      done(charset, undefined);
      return;
    }
    // Decoding would silently turn bytes that are not UTF-8 (Latin-1 sent unlabelled) into U+FFFD.
    if (!isUtf8(bytes)) {
      done(new AppError('VALIDATION_ERROR', 'The request body is not valid UTF-8; JSON must be sent in UTF-8.'), undefined);
      return;
    }
    try {
      const text = bytes.toString('utf8');
      const value = parseJsonBody(text);
      request.bodyJson = text;
      done(null, value);
    } catch (error) {
      done(error as AppError, undefined);
    }
  });
  // Any other type is 415, unread; but a route that takes no body has nothing to refuse in an empty one, however labelled.
  app.addContentTypeParser('*', (request, _payload, done) => {
    const empty = declaresNoBody(request.headers['content-length']) && request.headers['transfer-encoding'] === undefined;
    // An unknown route is 404 whatever it was sent.
    if (request.is404 || (empty && request.routeOptions.schema?.body === undefined)) {
      done(null, undefined);
      return;
    }
    done(new AppError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be sent with Content-Type: application/json.'), undefined);
  });
}
