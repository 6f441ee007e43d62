// Prototype-poisoning keys in parsed JSON, refused alike over HTTP and Kafka: an own `__proto__`, or a `constructor`
// object carrying `prototype` (secure-json-parse's `error` policy).

/** Whether JSON text can hold such a key at all: only if it spells one, literally or with \u escapes. */
export function mayHoldPoisoningKey(text: string): boolean {
  return text.includes('__proto__') || text.includes('constructor') || text.includes('\\u');
}

/** The path of a value's child in error messages: `facts.a`, `facts.a[0]`; the root's path is empty. */
export function jsonPath(parent: string, key: string, inArray: boolean): string {
  return inArray ? `${parent}[${key}]` : parent === '' ? key : `${parent}.${key}`;
}

/** The path (`facts.a[0].__proto__`) of the first poisoning key, walked without recursion; undefined when there is none. */
export function poisoningKeyPath(root: unknown): string | undefined {
  const stack: { value: unknown; path: string }[] = [{ value: root, path: '' }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    for (const [key, child] of Object.entries(value)) {
      const childPath = jsonPath(path, key, Array.isArray(value));
      const poisoning =
        key === '__proto__' || (key === 'constructor' && typeof child === 'object' && child !== null && Object.hasOwn(child, 'prototype'));
      if (poisoning) return childPath;
      stack.push({ value: child, path: childPath });
    }
  }
  return undefined;
}
