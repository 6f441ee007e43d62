// Whether a pid names a live process: for locks and run folders whose owner may be gone.

/** True while a process has this pid, also another user's (EPERM). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
