// A pid namespace a test owns (`unshare --pid --fork --mount-proc --kill-child`, a reaping init), for
// agents and jobs that must not reach the machine's other processes: closing it, or the test process
// dying, ends every process in it.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { procStat } from '../../src/base/proc.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The pid namespace of a process (`pid:[4026531836]`), or null. */
export const nsOf = (pid: number | 'self'): string | null => {
  try {
    return readlinkSync(`/proc/${pid}/ns/pid`);
  } catch {
    return null;
  }
};

/**
 * PID 1 of a box: reaps every orphan of the namespace at once (a job that forks its successor and exits,
 * for ever, would otherwise fill the machine's whole pid table with zombies within seconds: every fork on
 * the machine then fails), and leaves after ten minutes.
 */
const INIT = 'my $end = time + 600; while (time < $end) { select(undef, undef, undef, 0.01) if wait() < 0 }';

/** Does this util-linux's setpriv know --pdeathsig (2.33 and later)? */
const HAS_PDEATHSIG = (() => {
  try {
    return /--pdeathsig/.test(
      execFileSync('setpriv', ['--help'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }),
    );
  } catch {
    return false;
  }
})();

export /** A pid namespace the test owns: `unshare --pid --fork --mount-proc --kill-child` over a reaping init. */
class Box {
  private constructor(
    readonly unshare: ChildProcess,
    /** The namespace's init (a `sleep`), as the machine's namespace numbers it. */
    readonly init: number,
    readonly ns: string,
  ) {}

  static async open(): Promise<Box> {
    // `setpriv --pdeathsig KILL`: the box dies with the test process, whatever kills it (its init is
    // killed with the unshare, and every process of the namespace with its init).
    const unshare = ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child', 'perl', '-e', INIT];
    const argv = HAS_PDEATHSIG ? ['setpriv', '--pdeathsig', 'KILL', '--', ...unshare] : unshare;
    const u = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore' });
    for (let i = 0; i < 200; i++) {
      const kids = (() => {
        try {
          return readFileSync(`/proc/${u.pid}/task/${u.pid}/children`, 'utf8').trim();
        } catch {
          return '';
        }
      })();
      const init = Number(kids.split(' ')[0]);
      const ns = init > 0 ? nsOf(init) : null;
      if (ns && ns !== nsOf('self')) return new Box(u, init, ns);
      await sleep(50);
    }
    u.kill('SIGKILL');
    throw new Error('unshare --pid gave no namespace');
  }

  /**
   * A command prefix that runs a program inside the box (pid and mount namespace), in `cwd`. (The
   * directory is entered after the switch: a cwd opened before it, as `nsenter --wd=DIR` does, is
   * unreachable in the new mount namespace, and Codex fails on it.)
   */
  wrap(cwd: string): string[] {
    return [
      'nsenter',
      `--target=${this.init}`,
      '--pid',
      '--mount',
      '--',
      '/bin/sh',
      '-c',
      'cd -- "$0" && exec "$@"',
      cwd,
    ];
  }

  /**
   * A launcher script at `file` that runs `program args… "$@"` in the box, in `cwd` (for drivers that
   * take an executable, as runCodex takes codexBin).
   */
  launcher(file: string, cwd: string, program: string[]): string {
    const quote = (a: string) => `'${a.replaceAll("'", `'\\''`)}'`;
    writeFileSync(file, `#!/bin/sh\nexec ${[...this.wrap(cwd), ...program].map(quote).join(' ')} "$@"\n`);
    chmodSync(file, 0o755);
    return file;
  }

  /** The process is in the box: it, or one of its ancestors, runs in the box's pid namespace. */
  holds(pid: number): boolean {
    for (let p: number | undefined = pid, n = 0; p && p > 1 && n < 64; n++) {
      if (nsOf(p) === this.ns) return true;
      p = procStat(p)?.ppid;
    }
    return false;
  }

  /** Ends the box: the unshare dies, its child (the namespace's init) with it, and with the init every
   * process of the namespace and of the namespaces nested in it. */
  async close(): Promise<void> {
    this.unshare.kill('SIGKILL');
    for (let i = 0; i < 200 && ![undefined, 'Z', 'X'].includes(procStat(this.init)?.state); i++) await sleep(50);
  }
}
