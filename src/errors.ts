// Every error code the service can answer with, in one registry. Retired codes are never reused.

export interface ErrorSpec {
  /** HTTP status the code is answered with. */
  readonly status: number;
  /** True when trying again later can succeed (broker or Redis hiccup), false when the input itself is wrong. */
  readonly retryable: boolean;
  /** One line for docs/errors.md and the OpenAPI description. */
  readonly meaning: string;
}

export const ERROR_CODES = {
  VALIDATION_ERROR: {
    status: 400,
    retryable: false,
    meaning: 'The request format is invalid: malformed JSON, wrong types, unknown or forbidden fields.',
  },
  DSL_ERROR: { status: 400, retryable: false, meaning: 'The condition DSL is invalid; the detail lists the path of every problem.' },
  UNAUTHORIZED: { status: 401, retryable: false, meaning: 'Authentication is on and no valid API key was sent.' },
  FORBIDDEN: { status: 403, retryable: false, meaning: 'The API key is valid but its scope does not allow this operation.' },
  RULE_NOT_FOUND: { status: 404, retryable: false, meaning: 'The given rule id does not exist.' },
  NOT_FOUND: { status: 404, retryable: false, meaning: 'The execution, ruleset, session or route does not exist.' },
  SESSION_NOT_FOUND: { status: 404, retryable: false, meaning: 'The session does not exist or has expired.' },
  CONFLICT: {
    status: 409,
    retryable: false,
    meaning: 'The change conflicts with stored state, e.g. a rule name already used in its domain.',
  },
  SESSION_FULL: {
    status: 409,
    retryable: false,
    meaning: 'The session already holds RULES_SESSION_MAX_FACTS facts; retract one before adding another.',
  },
  REQUEST_TIMEOUT: {
    status: 408,
    retryable: true,
    meaning: "The request was not received in full within the server's request timeout.",
  },
  PRECONDITION_FAILED: {
    status: 412,
    retryable: false,
    meaning: "The request's If-Match names a version the resource is no longer at: read it again and reapply the change.",
  },
  PAYLOAD_TOO_LARGE: { status: 413, retryable: false, meaning: 'The request body is larger than the configured limit.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, retryable: false, meaning: 'A request body was sent without Content-Type: application/json.' },
  HEADERS_TOO_LARGE: { status: 431, retryable: false, meaning: "The request's headers exceed the server's header size limit." },
  INTERNAL_ERROR: { status: 500, retryable: false, meaning: 'Server error; no internals are disclosed.' },
  UNAVAILABLE: { status: 503, retryable: true, meaning: 'A dependency (database, Redis, Kafka) is unavailable; try again later.' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** An error that crosses a boundary (HTTP, Kafka dead letter) with a registered code. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;

  constructor(code: ErrorCode, detail: string, options?: { cause?: unknown }) {
    super(detail, options);
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.retryable = ERROR_CODES[code].retryable;
  }

  toBody(): { detail: string; error_code: ErrorCode } {
    return { detail: this.message, error_code: this.code };
  }
}

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_CODES, value);
}

/** Walks the `cause` chain: true when any link is marked retryable (transient), so the caller retries instead of dead-lettering. */
export function isRetryable(error: unknown): boolean {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current instanceof Error && !seen.has(current)) {
    seen.add(current);
    if (current instanceof AppError) return current.retryable;
    if ((current as { retriable?: unknown }).retriable === true) return true;
    current = current.cause;
  }
  return false;
}

/**
 * One error in a line: its type unless a plain Error or ours, and its message; for one without a message (Node's
 * AggregateError when every address of a host refused), those of the errors inside it, else its code.
 */
export function describeError(error: Error): string {
  const inner = error instanceof AggregateError ? error.errors.filter((item) => item instanceof Error).map((item) => item.message) : [];
  const code = (error as { code?: unknown }).code;
  const message = error.message !== '' ? error.message : inner.length > 0 ? inner.join('; ') : typeof code === 'string' ? code : '';
  // A type such as TypeError says something; a plain Error, ours, or pg's (named `error`) would not.
  const named = /^[A-Z]\w*Error$/.test(error.name) && error.name !== 'Error' && !(error instanceof AppError);
  return named ? `${error.name}: ${message}` : message;
}

/** The error and each cause below it (at most 5 in all: a chain may loop), every one in a line as describeError says it. */
export function errorChain(error: unknown): string[] {
  const lines: string[] = [];
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    lines.push(current instanceof Error ? describeError(current) : String(current));
    current = current instanceof Error ? current.cause : undefined;
  }
  return lines;
}
