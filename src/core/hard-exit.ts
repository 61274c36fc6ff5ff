/**
 * Ending the process when a plugin is stuck in a blocking call.
 *
 * A plugin blocked in a filesystem read or a native call (a wedged GPU can
 * hang NVML) holds a libuv threadpool thread. Node's exit runs libuv's
 * cleanup, which joins those threads: process.exit() would then hang forever
 * and systemd would have to SIGKILL us. Sinks are flushed and stdout/stderr
 * writes to files and pipes are synchronous on Linux, so leaving through
 * libc's _exit(2), which skips that cleanup, loses nothing.
 */
export async function exitProcess(code: number, blocked: boolean): Promise<never> {
  if (blocked) {
    try {
      const koffi = (await import('koffi')).default;
      const exit = koffi.load('libc.so.6').func('void _exit(int)') as (c: number) => void;
      exit(code);
    } catch {
      /* no libc binding: fall back to the normal exit */
    }
  }
  process.exit(code);
}
