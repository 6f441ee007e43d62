// JSON with object keys sorted (UTF-16 code unit order) at every depth: the same value always gives the same text.

/** Like JSON.stringify (undefined members dropped, toJSON honoured), but key order never depends on insertion or on jsonb. */
export function canonicalJson(value: unknown): string {
  const plain = hasToJson(value) ? value.toJSON() : value;
  if (Array.isArray(plain)) {
    return `[${plain.map((item: unknown) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  }
  if (plain !== null && typeof plain === 'object') {
    const entries = Object.entries(plain)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`;
  }
  return JSON.stringify(plain) ?? 'null';
}

function hasToJson(value: unknown): value is { toJSON(): unknown } {
  return value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function';
}
