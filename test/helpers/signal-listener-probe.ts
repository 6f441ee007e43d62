// Preloaded (node --import) by a test: says on standard error when the process starts listening for SIGTERM, so the
// test can signal at that moment rather than after a guessed delay.
const on = process.on.bind(process);
process.on = ((event: string | symbol, listener: (...args: unknown[]) => void) => {
  on(event, listener);
  if (event === 'SIGTERM') process.stderr.write('probe: listening for SIGTERM\n');
  return process;
}) as typeof process.on;
