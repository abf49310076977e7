// Process entry of the bundle. The hook path loads only what it needs; the CLI is a separate
// bundle (dist/cli.cjs) required lazily.
import { hookMain } from './hook.js';

const argv = process.argv.slice(2);
if (argv[0] === 'hook') {
  // Exit 2 blocks a PreToolUse; on Stop it would keep the turn going, so only the tool hook uses it.
  const ev = argv.indexOf('--event');
  const blocking = ev < 0 || argv[ev + 1] === 'PreToolUse';
  process.on('uncaughtException', (err) => {
    process.stderr.write(`Latch hook internal error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(blocking ? 2 : 0);
  });
  process.on('unhandledRejection', (err) => {
    process.stderr.write(`Latch hook internal error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(blocking ? 2 : 0);
  });
  void hookMain(argv.slice(1));
} else {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const cli = require('./cli.cjs') as { cliMain(argv: string[]): Promise<number> };
  cli.cliMain(argv).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`latch: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
