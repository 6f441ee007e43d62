import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.ts';
import { clientErrorReplier, toErrorReply } from '../../../src/http/error-handler.ts';

const fastifyError = (code: string, statusCode: number, message = 'fastify says') =>
  Object.assign(new Error(message), { code, statusCode });

describe('toErrorReply', () => {
  it('answers an AppError with its own status, code and detail', () => {
    expect(toErrorReply(new AppError('CONFLICT', 'name taken'), 1024)).toEqual({
      status: 409,
      body: { detail: 'name taken', error_code: 'CONFLICT' },
    });
  });

  it.each([
    [
      'FST_ERR_CTP_INVALID_MEDIA_TYPE',
      415,
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      'Request bodies must be sent with Content-Type: application/json.',
    ],
    ['FST_ERR_CTP_BODY_TOO_LARGE', 413, 413, 'PAYLOAD_TOO_LARGE', 'The request body is larger than the limit of 1024 bytes.'],
    ['FST_ERR_CTP_EMPTY_JSON_BODY', 400, 400, 'VALIDATION_ERROR', 'The request body is empty; send a JSON object.'],
    ['FST_ERR_CTP_INVALID_CONTENT_LENGTH', 400, 400, 'VALIDATION_ERROR', 'The Content-Length header does not match the body.'],
  ])('maps Fastify %s to %d', (code, statusCode, status, errorCode, detail) => {
    expect(toErrorReply(fastifyError(code, statusCode), 1024)).toEqual({ status, body: { detail, error_code: errorCode } });
  });

  it.each([
    [401, 'UNAUTHORIZED'],
    [404, 'NOT_FOUND'],
    [412, 'PRECONDITION_FAILED'],
    [405, 'VALIDATION_ERROR'],
    [400, 'VALIDATION_ERROR'],
  ])('maps any other Fastify %d to %s, keeping its message', (statusCode, errorCode) => {
    const reply = toErrorReply(fastifyError('FST_ERR_SOMETHING', statusCode, 'client mistake'), 1024);
    expect(reply.body).toEqual({ detail: 'client mistake', error_code: errorCode });
  });

  it("answers a library's 403 (not a scope refusal, which is ours) as a resource that does not exist", () => {
    expect(toErrorReply(fastifyError('FST_ERR_SOMETHING', 403, 'Forbidden'), 1024)).toEqual({
      status: 404,
      body: { detail: 'No such resource.', error_code: 'NOT_FOUND' },
    });
  });

  it('hides the internals of an unexpected error', () => {
    const reply = toErrorReply(new TypeError('cannot read properties of undefined (reading "secret")'), 1024);
    expect(reply).toEqual({ status: 500, body: { detail: 'Internal server error.', error_code: 'INTERNAL_ERROR' } });
  });

  it('answers a retryable failure (e.g. a broker hiccup) with 503', () => {
    const reply = toErrorReply(Object.assign(new Error('leader not available'), { retriable: true }), 1024);
    expect(reply).toEqual({ status: 503, body: { detail: 'A dependency is unavailable; try again later.', error_code: 'UNAVAILABLE' } });
  });

  it('answers something that is not even an Error with 500', () => {
    expect(toErrorReply('a string was thrown', 1024).status).toBe(500);
    expect(toErrorReply(undefined, 1024).status).toBe(500);
  });
});

describe('clientErrorReplier', () => {
  function fakeSocket(state: { destroyed?: boolean; writable?: boolean } = {}) {
    const written: string[] = [];
    let destroyedWith: unknown;
    const socket = {
      destroyed: state.destroyed ?? false,
      writable: state.writable ?? true,
      write: (text: string) => written.push(text),
      destroy: (error: unknown) => {
        destroyedWith = error;
      },
    };
    return { socket: socket as unknown as Socket, written, destroyedWith: () => destroyedWith };
  }
  const failure = (code: string) => Object.assign(new Error(code), { code });

  it.each([
    ['ERR_HTTP_REQUEST_TIMEOUT', 408, 'Request Timeout', 'REQUEST_TIMEOUT'],
    ['HPE_HEADER_OVERFLOW', 431, 'Request Header Fields Too Large', 'HEADERS_TOO_LARGE'],
    ['HPE_INVALID_METHOD', 400, 'Bad Request', 'VALIDATION_ERROR'],
  ])('answers %s with %i in the error shape and closes the connection', (code, status, text, errorCode) => {
    const { socket, written, destroyedWith } = fakeSocket();
    const error = failure(code);
    clientErrorReplier(error, socket);
    expect(written).toHaveLength(1);
    const [head, body] = written[0]!.split('\r\n\r\n');
    expect(head!.split('\r\n')[0]).toBe(`HTTP/1.1 ${status} ${text}`);
    expect(head).toContain(`Content-Length: ${Buffer.byteLength(body!)}`);
    expect(JSON.parse(body!).error_code).toBe(errorCode);
    expect(destroyedWith()).toBe(error);
  });

  it('writes nothing to a connection the client reset or that is gone', () => {
    const reset = fakeSocket();
    clientErrorReplier(failure('ECONNRESET'), reset.socket);
    const gone = fakeSocket({ destroyed: true });
    clientErrorReplier(failure('HPE_INVALID_METHOD'), gone.socket);
    expect([...reset.written, ...gone.written]).toEqual([]);
  });
});
