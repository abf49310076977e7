// A child process with stdin text and a hard timeout that kills its whole process group: what Latch
// runs to ask an agent's binary or a helper something (doctor, demo, checks), whichever agent it is.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

export interface BoundedResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  /** Set when the process could not be started. */
  spawnError?: string;
}

/** Runs a process with stdin text and a hard timeout (SIGKILL to its process group). Never rejects. */
export function runBounded(
  cmd: string,
  args: string[],
  opts: { env: NodeJS.ProcessEnv | Record<string, string>; cwd: string; input?: string; timeoutMs: number },
): Promise<BoundedResult> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    let done = false;
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    } catch (err) {
      resolve({
        code: null,
        signal: null,
        timedOut: false,
        stdout: '',
        stderr: '',
        spawnError: (err as Error).message,
      });
      return;
    }
    const finish = (r: BoundedResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid, () => child.kill('SIGKILL'));
    }, opts.timeoutMs);
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdin.on('error', () => {
      /* the child may exit without reading its input */
    });
    child.on('error', (err) => finish({ code: null, signal: null, timedOut, stdout, stderr, spawnError: err.message }));
    child.on('close', (code, signal) => finish({ code, signal, timedOut, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}

export function killGroup(pid: number | undefined, fallback: () => void): void {
  try {
    if (pid === undefined) throw new Error('no pid');
    process.kill(-pid, 'SIGKILL');
  } catch {
    try {
      fallback();
    } catch {
      /* already gone */
    }
  }
}
