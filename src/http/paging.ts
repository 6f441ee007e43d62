// Listings answer with a JSON array and, when more exist, a Link header pointing at the next page (RFC 8288).
import type { FastifyReply, FastifyRequest } from 'fastify';

/** The request's own path and query with `cursor` replaced, so the next page keeps every filter and the limit. */
export function nextPageLink(request: Pick<FastifyRequest, 'url'>, cursor: string): string {
  const url = new URL(request.url, 'http://localhost');
  url.searchParams.set('cursor', cursor);
  return `<${url.pathname}${url.search}>; rel="next"`;
}

export function sendPage<T>(request: FastifyRequest, reply: FastifyReply, page: { items: T[]; next_cursor: string | null }): T[] {
  if (page.next_cursor !== null) reply.header('link', nextPageLink(request, page.next_cursor));
  return page.items;
}
