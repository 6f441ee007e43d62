// Rule versions as HTTP entity tags: `ETag: "3"` on reads and writes, `If-Match` on replace, patch and delete.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { VersionCondition } from '../store/types.ts';

/** The strong entity tag of a resource version. */
export function entityTag(version: number): string {
  return `"${version}"`;
}

/** Sends the version as the reply's ETag; returns the body for chaining. */
export function withEntityTag<T extends { version: number }>(reply: FastifyReply, resource: T): T {
  reply.header('etag', entityTag(resource.version));
  return resource;
}

/**
 * The versions `If-Match` allows a change to apply to; undefined without the header or with `*` (any version). Tags this
 * service never issues (weak ones, other text) match nothing, so a header holding only those refuses every change.
 */
export function ifMatchVersions(request: FastifyRequest): VersionCondition | undefined {
  const header = request.headers['if-match'];
  if (header === undefined) return undefined;
  const tags = header.split(',').map((tag) => tag.trim());
  if (tags.includes('*')) return undefined;
  return tags.flatMap((tag) => {
    // Strong comparison: "01" is not the tag "1".
    const version = /^"(0|[1-9]\d{0,9})"$/.exec(tag)?.[1];
    return version === undefined ? [] : [Number(version)];
  });
}
