// Field paths (DSL contract): dots walk own properties, a numeric segment indexes an array, a literal dotted key wins.

/** Reads one step of a path from an already resolved value; undefined when missing. */
export type FieldGetter = (root: unknown) => unknown;

type Indexable = Record<string, unknown>;

const hasOwn = Object.hasOwn;
const MAX_ARRAY_INDEX = 4_294_967_294;

/** The array index a segment names (`0`, `12`; never `01` or `-1`), or -1 when it is not an index. */
function arrayIndex(segment: string): number {
  if (segment.length === 0 || segment.length > 10) return -1;
  if (segment.length > 1 && segment.charCodeAt(0) === 48) return -1;
  for (let i = 0; i < segment.length; i += 1) {
    const code = segment.charCodeAt(i);
    if (code < 48 || code > 57) return -1;
  }
  const index = Number(segment);
  return index <= MAX_ARRAY_INDEX ? index : -1;
}

/** One step: own property of an object, or an index into an array; undefined for anything else. */
function step(current: unknown, segment: string, index: number): unknown {
  if (typeof current !== 'object' || current === null) return undefined;
  if (Array.isArray(current)) return index >= 0 && index < current.length && hasOwn(current, index) ? current[index] : undefined;
  return hasOwn(current, segment) ? (current as Indexable)[segment] : undefined;
}

/**
 * The value at `path` in `facts`, or undefined when it is missing.
 * Only own properties are read, so `__proto__`, `constructor` or `toString` are missing unless the fact has them itself.
 * When the path has a dot, a key that literally equals the whole path is tried first (`{"user.age": 30}`).
 */
export function getPath(facts: unknown, path: string): unknown {
  if (typeof facts !== 'object' || facts === null) return undefined;
  if (!Array.isArray(facts) && hasOwn(facts, path)) return (facts as Indexable)[path];
  if (!path.includes('.')) return Array.isArray(facts) ? step(facts, path, arrayIndex(path)) : undefined;
  let current: unknown = facts;
  for (const segment of path.split('.')) {
    current = step(current, segment, arrayIndex(segment));
    if (current === undefined) return undefined;
  }
  return current;
}

/** A getter specialised for one path, for compiled conditions: same result as getPath, less work per call. */
export function compileGetter(path: string): FieldGetter {
  if (!path.includes('.')) {
    const index = arrayIndex(path);
    return (root) => {
      if (typeof root !== 'object' || root === null) return undefined;
      if (Array.isArray(root)) return step(root, path, index);
      return hasOwn(root, path) ? (root as Indexable)[path] : undefined;
    };
  }
  const segments = path.split('.');
  const indexes = segments.map(arrayIndex);
  const count = segments.length;
  return (root) => {
    if (typeof root !== 'object' || root === null) return undefined;
    if (!Array.isArray(root) && hasOwn(root, path)) return (root as Indexable)[path];
    let current: unknown = root;
    for (let i = 0; i < count; i += 1) {
      current = step(current, segments[i]!, indexes[i]!);
      if (current === undefined) return undefined;
    }
    return current;
  };
}
