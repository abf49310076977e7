#!/usr/bin/env node
'use strict';
try {
  require('../dist/latch.cjs');
} catch (err) {
  if (err && err.code === 'MODULE_NOT_FOUND' && String(err.message).includes('dist/latch.cjs')) {
    process.stderr.write('latch: not built; run `npm run build` in the agent-latch checkout\n');
    process.exit(2);
  }
  throw err;
}
