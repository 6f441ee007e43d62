// Entry point (`node src/main.ts`): listens for stop signals before the service's modules load, then starts it. A
// signal with no handler kills a process, and is ignored by one running as PID 1 (a container without an init).
const heard: string[] = [];
let handle = (signal: string): void => void heard.push(signal);
// Kept for good: a repeated signal (a process group's SIGTERM and its supervisor's forward of it) must not kill the stop.
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => handle(signal));

// Before the start-up's collections can free the hidden classes of nextTick's queue entries (see tick-shape.ts).
const { keepTickShape } = await import('./tick-shape.ts');
keepTickShape();

const { failedToStart, runService } = await import('./service.ts');
await runService((onSignal) => {
  handle = onSignal;
  for (const signal of heard.splice(0)) onSignal(signal);
}).catch(failedToStart);
