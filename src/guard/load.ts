// The guard's lazily loaded parts: each its own file in the hook bundle (see scripts/build.mjs).
export type Slow = typeof import('./slow.js');
export type Observer = typeof import('../ledger/observer.js');
let slowModule: Promise<Slow> | undefined;
let observerModule: Promise<Observer> | undefined;
/** Loads the slow path once (a separate file in the bundle; see scripts/build.mjs). */
export function loadSlow(): Promise<Slow> {
  return (slowModule ??= import('./slow.js'));
}
/** Loads the observation path once (its own file in the bundle, smaller than the slow path). */
export function loadObserver(): Promise<Observer> {
  return (observerModule ??= import('../ledger/observer.js'));
}
