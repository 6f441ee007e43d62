// How deeply a JSON value nests: one check for request bodies, facts over HTTP and facts over Kafka.

/** Deepest nesting a fact may have (the fact object itself is level 1), over HTTP and Kafka alike. */
export const MAX_FACT_DEPTH = 64;

/** Limits up to this are checked by bounded recursion, several times faster than an explicit stack; larger ones iteratively. */
const MAX_RECURSIVE_LIMIT = 1_000;

/** True when a JSON value nests deeper than `limit` levels (the outermost object or array is level 1); never overflows the stack. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (limit <= MAX_RECURSIVE_LIMIT) return nestsBelow(value, 1, limit, Number.POSITIVE_INFINITY);
  const stack: { item: object; depth: number }[] = [{ item: value, depth: 1 }];
  while (stack.length > 0) {
    const { item, depth } = stack.pop()!;
    if (depth > limit) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (typeof child === 'object' && child !== null) stack.push({ item: child, depth: depth + 1 });
    }
  }
  return false;
}

/**
 * Whether `value`, at level `depth`, has anything below level `limit` or an array longer than `maxArray`; allocates
 * nothing, and recurses at most `limit` deep.
 */
function nestsBelow(value: object, depth: number, limit: number, maxArray: number): boolean {
  if (depth > limit) return true;
  if (Array.isArray(value)) {
    if (value.length > maxArray) return true;
    for (let index = 0; index < value.length; index++) {
      const child: unknown = value[index];
      if (typeof child === 'object' && child !== null && nestsBelow(child, depth + 1, limit, maxArray)) return true;
    }
    return false;
  }
  // for...in also visits inherited enumerable keys; JSON values have none.
  for (const key in value) {
    const child: unknown = (value as Record<string, unknown>)[key];
    if (typeof child === 'object' && child !== null && nestsBelow(child, depth + 1, limit, maxArray)) return true;
  }
  return false;
}

/**
 * Most elements an array in a fact may hold, as a rule's list may: every `any`/`all` node scans a fact's array whole,
 * so a rule of hundreds of them over one array of 350,000 (a 1 MiB body) held the event loop for seconds.
 */
export const MAX_FACT_ARRAY = 10_000;

/** True when a fact nests deeper than MAX_FACT_DEPTH or holds an array longer than MAX_FACT_ARRAY: one walk for both. */
export function exceedsFactLimits(value: unknown): boolean {
  return typeof value === 'object' && value !== null && nestsBelow(value, 1, MAX_FACT_DEPTH, MAX_FACT_ARRAY);
}

/** The fact check's message (`must ...`) when exceedsFactLimits, else undefined. */
export function factLimitProblem(value: unknown): string | undefined {
  if (!exceedsFactLimits(value)) return undefined;
  return nestsDeeperThan(value, MAX_FACT_DEPTH)
    ? `must not be nested deeper than ${MAX_FACT_DEPTH} levels`
    : `must not hold an array of more than ${MAX_FACT_ARRAY.toLocaleString('en-US')} elements`;
}
