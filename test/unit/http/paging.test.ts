import { describe, expect, it } from 'vitest';
import { nextPageLink } from '../../../src/http/paging.ts';

describe('nextPageLink', () => {
  it('keeps the path, the filters and the limit, and sets the cursor', () => {
    expect(nextPageLink({ url: '/api/v1/rules?domain=payments&limit=2' }, 'Mw')).toBe(
      '</api/v1/rules?domain=payments&limit=2&cursor=Mw>; rel="next"',
    );
  });

  it('replaces a cursor already present', () => {
    expect(nextPageLink({ url: '/api/v1/audit?cursor=old&action=create' }, 'new')).toBe(
      '</api/v1/audit?cursor=new&action=create>; rel="next"',
    );
  });

  it('encodes what needs encoding', () => {
    expect(nextPageLink({ url: '/api/v1/rules?tag=a%20b' }, 'x=')).toBe('</api/v1/rules?tag=a+b&cursor=x%3D>; rel="next"');
  });
});
