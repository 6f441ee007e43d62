// A binary heap ordered by a comparator; the working memory keeps min/max members in them.

export class MinHeap<T> {
  readonly #items: T[] = [];
  readonly #before: (a: T, b: T) => boolean;

  /** `before(a, b)`: a comes out first. */
  constructor(before: (a: T, b: T) => boolean, items: Iterable<T> = []) {
    this.#before = before;
    for (const item of items) this.push(item);
  }

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  /** Every item, in no particular order. */
  values(): T[] {
    return [...this.#items];
  }

  push(item: T): void {
    const items = this.#items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#before(item, items[parent] as T)) break;
      items[i] = items[parent] as T;
      i = parent;
    }
    items[i] = item;
  }

  pop(): T | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && this.#before(items[right] as T, items[left] as T) ? right : left;
      if (!this.#before(items[child] as T, last)) break;
      items[i] = items[child] as T;
      i = child;
    }
    items[i] = last;
    return top;
  }
}
