// Counts the turns the event loop gives other work while `work` runs: code that never yields leaves the count at 0.
export async function turnsDuring<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let done = false;
  const count = (): void => {
    if (done) return;
    turns += 1;
    setImmediate(count);
  };
  setImmediate(count);
  try {
    return { result: await work(), turns };
  } finally {
    done = true;
  }
}
