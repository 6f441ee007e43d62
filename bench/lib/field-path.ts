// Dotted field paths as the DSL defines them: dots walk own properties, a numeric segment indexes an array,
// and a key of the fact that literally equals the whole dotted path wins.

const ARRAY_INDEX = /^(0|[1-9][0-9]{0,9})$/;

/** The value at a field of a fact, or undefined when it is missing. */
export function resolveField(fact: unknown, field: string): unknown {
  if (isPlainObject(fact) && Object.hasOwn(fact, field)) return fact[field];
  return walkPath(fact, field);
}

/** Walks a dotted path step by step (no literal-key rule); undefined as soon as a step is missing. */
export function walkPath(value: unknown, path: string): unknown {
  let current = value;
  for (const segment of path.split('.')) {
    if (Array.isArray(current)) {
      if (!ARRAY_INDEX.test(segment) || !Object.hasOwn(current, segment)) return undefined;
      current = current[Number(segment)];
    } else if (isPlainObject(current) && Object.hasOwn(current, segment)) {
      current = current[segment];
    } else {
      return undefined;
    }
  }
  return current;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
