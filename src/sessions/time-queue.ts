// Items in ascending order of a time: appending in order costs O(1), a late item is inserted by binary search, and the
// oldest leave from the front. Window eviction in the working memory uses it, where nearly every fact arrives in order.

export class TimeQueue<T> {
  #items: (T | undefined)[] = [];
  #head = 0;
  readonly #timeOf: (item: T) => number;

  constructor(timeOf: (item: T) => number, items: Iterable<T> = []) {
    this.#timeOf = timeOf;
    const sorted = [...items].sort((a, b) => timeOf(a) - timeOf(b));
    this.#items = sorted;
  }

  get size(): number {
    return this.#items.length - this.#head;
  }

  peek(): T | undefined {
    return this.#items[this.#head];
  }

  /** Every item, oldest first. */
  values(): T[] {
    return this.#items.slice(this.#head) as T[];
  }

  push(item: T): void {
    const items = this.#items;
    const time = this.#timeOf(item);
    const last = items[items.length - 1];
    if (last === undefined || this.#timeOf(last) <= time) {
      items.push(item);
      return;
    }
    // Late: after every item with the same or an earlier time, so equal times keep arrival order.
    let low = this.#head;
    let high = items.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.#timeOf(items[middle] as T) <= time) low = middle + 1;
      else high = middle;
    }
    items.splice(low, 0, item);
  }

  pop(): T | undefined {
    const items = this.#items;
    if (this.#head >= items.length) return undefined;
    const item = items[this.#head];
    items[this.#head] = undefined;
    this.#head += 1;
    // The emptied front is given back once it is most of the array.
    if (this.#head === items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= items.length) {
      this.#items = items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }
}
