// Loaded before every test file (scripts/test.mjs): a failing property reports the error it threw
// (an assertion's message says what differed), not only the counterexample. fast-check 4 keeps the
// error as the report's `cause`, which the test runner's output does not show.
import fc from 'fast-check';

fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });
