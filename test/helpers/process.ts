import type { ChildProcess } from 'node:child_process';

/** SIGTERM and wait for the exit (a test's servers must be gone before the next test). */
export async function stopProcess(p: ChildProcess | undefined): Promise<void> {
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise((r) => p.once('exit', r));
  p.kill('SIGTERM');
  await exited;
}
