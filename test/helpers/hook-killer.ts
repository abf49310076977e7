// A program an agent leaves running to kill Latch's hooks as they appear (issue 29.2): it SIGKILLs every
// process whose command line holds `needle` (`PreToolUse`: the PreToolUse hooks; `--event`: every hook,
// the fail-closed wrapper's shell and the hook's node alike) and whose environment holds this test's
// Latch home, and nothing else (a hook of any other test or user has another home). Python, written
// into `dir` by the test; it writes its pid to `killer.pid`, touches `ready` once running, and keeps
// the count of its kills in `kills`.
import { join } from 'node:path';

export function hookKiller(home: string, dir: string, needle: 'PreToolUse' | '--event'): string {
  return `import os, time
home = ${JSON.stringify(`LATCH_HOME=${home}`)}.encode()
with open(${JSON.stringify(join(dir, 'killer.pid'))}, 'w') as f: f.write(str(os.getpid()))
open(${JSON.stringify(join(dir, 'ready'))}, 'w').close()
kills = 0
while True:
    for name in os.listdir('/proc'):
        if not name.isdigit() or int(name) == os.getpid(): continue
        try:
            with open('/proc/%s/cmdline' % name, 'rb') as f: cmd = f.read()
            if ${JSON.stringify(needle)}.encode() not in cmd: continue
            with open('/proc/%s/environ' % name, 'rb') as f: env = f.read().split(b'\\0')
            if home not in env: continue
            os.kill(int(name), 9)
            kills += 1
            with open(${JSON.stringify(join(dir, 'kills'))}, 'w') as f: f.write(str(kills))
        except Exception:
            pass
    time.sleep(0.002)
`;
}
