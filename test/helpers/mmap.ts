// A python3 child holding a MAP_SHARED read-write mapping of a file, for the tamper tests' writes
// through a memory map (src/tamper/fingerprint.ts).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { statfsSync } from 'node:fs';
import { createInterface } from 'node:readline';

/** Whether python3 with mmap is there to make the writes. */
export const hasPython = spawnSync('python3', ['-c', 'import mmap']).status === 0;

const TMPFS_MAGIC = 0x01021994;

/** /dev/shm when it is a tmpfs (no writeback: a write through a map never moves the stat), else null. */
export const tmpfsDir: string | null = (() => {
  try {
    return statfsSync('/dev/shm').type === TMPFS_MAGIC ? '/dev/shm' : null;
  } catch {
    return null;
  }
})();

/** Each command writes through the mapping (`w OFFSET TEXT`) or reads one byte of it (`r`), answered by `ok`. */
export async function mapper(file: string): Promise<{ send(cmd: string): Promise<void>; close(): void }> {
  const py = [
    'import mmap, os, sys',
    'fd = os.open(sys.argv[1], os.O_RDWR)',
    'm = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)',
    "print('ready', flush=True)",
    'for line in sys.stdin:',
    "    op = line.rstrip('\\n').split(' ', 2)",
    "    if op[0] == 'w':",
    '        off = int(op[1]); data = op[2].encode()',
    '        m[off:off + len(data)] = data',
    "    elif op[0] == 'r':",
    '        _ = m[0]',
    "    print('ok', flush=True)",
  ].join('\n');
  const child = spawn('python3', ['-c', py, file], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => (await lines.next()).value as string | undefined;
  assert.equal(await next(), 'ready');
  return {
    async send(cmd: string) {
      child.stdin.write(`${cmd}\n`);
      assert.equal(await next(), 'ok', cmd);
    },
    close() {
      child.stdin.end();
      child.kill();
    },
  };
}
