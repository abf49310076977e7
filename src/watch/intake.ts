// The watcher's event intake: one fs.watch per directory of the tree (and .git, .git/info), each event
// recorded in the journal (journal.ts) as a path that may have changed, and the watches kept in step
// with the tree at once, in the event handler: a new directory watched (unless git ignores it), one
// gone unwatched, the ignored set derived again when the ignore rules or the index change.
import { existsSync, lstatSync, readdirSync, watch, type Dirent, type FSWatcher } from 'node:fs';
import path from 'node:path';
import { configFiles } from '../tree/enumerate.js';
import { ignoredDirs } from './ignored.js';
import type { Journal } from './journal.js';

interface WatchedDir {
  watcher: FSWatcher;
  ino: number;
}

export class TreeWatch {
  private readonly dirs = new Map<string, WatchedDir>();
  /** The root is a git work tree: directories git ignores (and that hold no tracked file) are not watched. */
  readonly gitTree: boolean;
  private ignored: Set<string>;
  /** The git config files and the global excludes file ('' when none), outside the tree: polled (checkConfigs). */
  private readonly gitConfigs: string[];
  private configSeen: string;
  private finished = false;

  /** `full`: the directory bound is exceeded (the watcher gives up). */
  constructor(
    private readonly root: string,
    private readonly maxDirs: number,
    private readonly journal: Journal,
    private readonly full: () => void,
  ) {
    // In a git work tree, directories git ignores (and that hold no tracked file) are not watched:
    // nothing below them is listed, and a large node_modules would exhaust the watches.
    this.gitTree = existsSync(path.join(root, '.git'));
    this.ignored = (this.gitTree && ignoredDirs(root)) || new Set();
    const { configs, globalIgnore } = configFiles(path.join(root, '.git'));
    this.gitConfigs = [...configs, globalIgnore];
    this.configSeen = this.gitTree ? this.configStamp() : '';
  }

  /** How many directories are watched. */
  get size(): number {
    return this.dirs.size;
  }

  /** Closes every watch; no event is handled after this. */
  close(): void {
    this.finished = true;
    for (const d of this.dirs.values()) d.watcher.close();
    this.dirs.clear();
  }

  /** Watches `rel` and every directory below it. False when the directory bound is exceeded. */
  watchTree(rel: string): boolean {
    const { root, dirs } = this;
    const stack = [rel];
    while (stack.length > 0 && !this.finished) {
      const d = stack.pop()!;
      const abs = d === '' ? root : path.join(root, d);
      const st = lstatSync(abs, { throwIfNoEntry: false });
      if (!st || !st.isDirectory()) continue;
      const old = dirs.get(d);
      if (old && old.ino === st.ino) continue;
      if (old) this.unwatch(d);
      if (dirs.size >= this.maxDirs) return false;
      let w: FSWatcher;
      try {
        w = watch(abs, { persistent: true }, (type, name) => this.onEvent(d, type, name));
      } catch {
        this.journal.lost = true; // vanished or no watch left: the next observation scans everything
        continue;
      }
      w.on('error', () => {
        this.journal.lost = true;
        this.unwatch(d);
      });
      dirs.set(d, { watcher: w, ino: st.ino });
      let names: Dirent[];
      try {
        names = readdirSync(abs, { withFileTypes: true });
      } catch {
        this.journal.lost = true;
        continue;
      }
      for (const e of names) {
        const childRel = d === '' ? e.name : `${d}/${e.name}`;
        if (e.name === '.git') {
          if (d === '' && e.isDirectory()) this.watchGitDir();
          continue;
        }
        if (e.isDirectory() && !this.ignored.has(childRel)) stack.push(childRel);
      }
    }
    return true;
  }

  /**
   * The ignore rules, the index or the directories changed: derive the ignored directories again and
   * watch those no longer ignored, journaling each as a changed entry (everything below it is then
   * stat'ed by the next observation: it was not watched until now).
   */
  refreshIgnored(): void {
    if (!this.gitTree) return;
    const before = this.ignored;
    this.ignored = ignoredDirs(this.root) ?? new Set();
    for (const d of before) {
      if (this.finished) return;
      if (this.ignored.has(d) || this.dirs.has(d)) continue;
      if (!lstatSync(path.join(this.root, d), { throwIfNoEntry: false })?.isDirectory()) continue;
      this.journal.record(d, 'r');
      if (!this.watchTree(d)) this.full();
    }
  }

  /**
   * A config or global excludes file (outside the tree: not watched) changed: the ignored set may
   * have too; until now a newly unignored directory went unwatched, so coverage is declared lost.
   */
  checkConfigs(): void {
    if (!this.gitTree) return;
    const stamp = this.configStamp();
    if (stamp !== this.configSeen) {
      this.configSeen = stamp;
      this.journal.lost = true;
      this.refreshIgnored();
    }
  }

  private configStamp(): string {
    return this.gitConfigs
      .map((f) => {
        const st = f ? lstatSync(f, { throwIfNoEntry: false }) : undefined;
        return st ? `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}` : '-';
      })
      .join('|');
  }

  /** .git and .git/info themselves (not recursive): the index, config and info/exclude. */
  private watchGitDir(): void {
    for (const d of ['.git', '.git/info']) {
      if (this.dirs.has(d)) continue;
      const abs = path.join(this.root, d);
      const st = lstatSync(abs, { throwIfNoEntry: false });
      if (!st || !st.isDirectory()) continue;
      try {
        const w = watch(abs, { persistent: true }, (_type, name) => {
          if (this.finished || !(name === 'index' || name === 'config' || name === 'exclude' || name === 'info'))
            return;
          this.journal.record(d, 'g');
          this.refreshIgnored();
        });
        w.on('error', () => {
          this.journal.lost = true;
          this.unwatch(d);
        });
        this.dirs.set(d, { watcher: w, ino: st.ino });
      } catch {
        this.journal.lost = true;
      }
    }
  }

  private unwatch(rel: string): void {
    const prefix = rel === '' ? '' : rel + '/';
    for (const [d, w] of this.dirs) {
      if (d === rel || d.startsWith(prefix)) {
        w.watcher.close();
        this.dirs.delete(d);
      }
    }
  }

  private onEvent(dirRel: string, type: string, name: string | Buffer | null): void {
    if (this.finished) return;
    if (name === null || typeof name !== 'string') {
      this.journal.lost = true;
      return;
    }
    const rel = dirRel === '' ? name : `${dirRel}/${name}`;
    if (name === '.git') {
      this.journal.record(rel, 'g');
      if (dirRel === '') this.watchGitDir();
      return;
    }
    if (type !== 'rename') {
      this.journal.record(rel, 'c');
      if (name === '.gitignore') this.refreshIgnored();
      return;
    }
    this.journal.record(rel, 'r');
    // An entry appeared, went away or was replaced: keep the watches in step, now (before any later event).
    const st = lstatSync(path.join(this.root, rel), { throwIfNoEntry: false });
    const known = this.dirs.get(rel);
    if (st?.isDirectory()) {
      if (!known || known.ino !== st.ino) {
        if (known) this.unwatch(rel);
        this.refreshIgnored(); // is the new directory (or one inside it) ignored?
        if (!this.ignored.has(rel) && !this.watchTree(rel)) this.full();
      }
    } else {
      if (known) this.unwatch(rel);
      if (name === '.gitignore') this.refreshIgnored();
    }
  }
}
