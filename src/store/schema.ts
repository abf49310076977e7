// Schema migrations, applied in order; PRAGMA user_version = number applied.
// The stat cache of src/tree/tree.ts (kept here so the hook path does not load tree.ts).
export const TREE_CACHE_SQL = `CREATE TABLE IF NOT EXISTS tree_cache (root TEXT NOT NULL, path TEXT NOT NULL, dev TEXT NOT NULL, ino TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns TEXT NOT NULL, ctime_ns TEXT NOT NULL, mode INTEGER NOT NULL, sha256 TEXT NOT NULL, cached_at_ns TEXT NOT NULL, PRIMARY KEY (root, path)) WITHOUT ROWID;`;

export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE sessions (
    session_id            TEXT PRIMARY KEY,
    workspace             TEXT NOT NULL,
    cwd                   TEXT NOT NULL,
    policy                TEXT NOT NULL,           -- continue | pause | fail_closed (fixed at first sight)
    scope                 TEXT NOT NULL,           -- session | workspace
    policy_json           TEXT NOT NULL,           -- the whole resolved policy and where it came from
    state                 TEXT NOT NULL,           -- mutable | latched | paused
    state_reason          TEXT,
    episode_started_at    TEXT,                    -- when the current latch/pause began
    parent_session_id     TEXT,
    agent_id              TEXT,
    transcript_path       TEXT,
    transcript_dev        TEXT,
    transcript_ino        TEXT,
    transcript_offset     INTEGER NOT NULL DEFAULT 0,  -- bytes consumed by the incremental scan
    transcript_compactions INTEGER NOT NULL DEFAULT 0, -- compactions the transcript scan has seen
    transcript_group      TEXT,                    -- JSON: markers of the compaction the scan is inside
    seen_pre_compact      INTEGER NOT NULL DEFAULT 0,  -- compactions each hook source has seen
    seen_post_compact     INTEGER NOT NULL DEFAULT 0,
    seen_start_compact    INTEGER NOT NULL DEFAULT 0,
    cli_version           TEXT,
    model                 TEXT,
    permission_mode       TEXT,
    created_at            TEXT NOT NULL,
    updated_at            TEXT NOT NULL
  );
  CREATE INDEX sessions_workspace ON sessions(workspace);

  CREATE TABLE compactions (
    session_id        TEXT NOT NULL REFERENCES sessions(session_id),
    seq               INTEGER NOT NULL,            -- 1-based, per session
    trigger           TEXT,                        -- auto | manual | null when unknown
    observed_via      TEXT NOT NULL,               -- JSON array: pre_compact, post_compact, session_start, transcript
    turn_id           TEXT,
    transcript_offset INTEGER,                     -- end of the compacted line, when the transcript showed it
    summary_kind      TEXT,                        -- local | remote | null
    checkpoint_id     TEXT,
    tripped_at        TEXT,
    first_seen_at     TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
  );

  CREATE TABLE checkpoints (
    id                TEXT PRIMARY KEY,
    session_id        TEXT NOT NULL REFERENCES sessions(session_id),
    compaction_seq    INTEGER NOT NULL,
    created_at        TEXT NOT NULL,
    turn_id           TEXT,
    trigger           TEXT,
    observed_via      TEXT NOT NULL,
    workspace         TEXT NOT NULL,
    git_head          TEXT,
    git_branch        TEXT,
    git_status_sha256 TEXT,
    tree_sha256       TEXT NOT NULL,
    tree_files        INTEGER NOT NULL,
    tree_listing      BLOB NOT NULL,
    transcript_path   TEXT,
    transcript_dev    TEXT,
    transcript_ino    TEXT,
    transcript_size   INTEGER,
    transcript_sha256 TEXT,
    cli_version       TEXT,
    model             TEXT,
    permission_mode   TEXT
  );
  CREATE INDEX checkpoints_session ON checkpoints(session_id, created_at);

  CREATE TABLE transitions (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id    TEXT NOT NULL,
    at            TEXT NOT NULL,
    event         TEXT NOT NULL,
    from_state    TEXT NOT NULL,
    to_state      TEXT NOT NULL,
    evidence_json TEXT NOT NULL
  );
  CREATE INDEX transitions_session ON transitions(session_id, id);

  CREATE TABLE denials (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id   TEXT NOT NULL,
    at           TEXT NOT NULL,
    turn_id      TEXT,
    tool_name    TEXT NOT NULL,
    tool_use_id  TEXT,
    summary      TEXT,
    reasons_json TEXT NOT NULL
  );
  CREATE INDEX denials_session ON denials(session_id, id);

  ${TREE_CACHE_SQL}
  `,
  `
  CREATE TABLE attempts (
    id            TEXT PRIMARY KEY,          -- <session_id>/<tool_use_id>: a duplicate delivery reuses it
    session_id    TEXT NOT NULL,
    workspace     TEXT NOT NULL,
    turn_id       TEXT,
    agent_id      TEXT,
    lane          TEXT NOT NULL,             -- session, or session/agent for a sub-agent
    tool_name     TEXT NOT NULL,
    tool_use_id   TEXT,
    summary       TEXT,
    state         TEXT NOT NULL,             -- started | closing | closed | abandoned
    started_at    TEXT NOT NULL,
    started_ns    TEXT NOT NULL,
    scan_gen      INTEGER NOT NULL,          -- the observation the pre-state refers to
    closing_ns    TEXT,
    closer_pid    INTEGER,
    closer_start  TEXT,
    recovery_gen  INTEGER NOT NULL DEFAULT 0,
    ended_at      TEXT,
    ended_ns      TEXT,
    end_reason    TEXT,
    output_seen   INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX attempts_workspace_state ON attempts(workspace, state);
  CREATE INDEX attempts_session ON attempts(session_id, started_ns);

  CREATE TABLE changes (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace      TEXT NOT NULL,
    scan_gen       INTEGER NOT NULL,
    observed_at    TEXT NOT NULL,
    observed_by    TEXT NOT NULL,            -- close | stop | checkpoint | verify | recovery | ...
    path           TEXT NOT NULL,
    change         TEXT NOT NULL,            -- added | modified | removed
    before_sha256  TEXT, before_mode INTEGER, before_size INTEGER,
    after_sha256   TEXT, after_mode INTEGER, after_size INTEGER,
    changed_ns     TEXT,                     -- ctime, or the parent directory's mtime for a removal
    attribution    TEXT NOT NULL,            -- attempt | contended | outside | unknown
    attempt_id     TEXT,
    session_id     TEXT,
    candidates_json TEXT NOT NULL DEFAULT '[]'
  );
  CREATE INDEX changes_path ON changes(workspace, path, id);
  CREATE INDEX changes_attempt ON changes(attempt_id);

  CREATE TABLE workspaces (
    workspace     TEXT PRIMARY KEY,
    scan_gen      INTEGER NOT NULL DEFAULT 0,
    last_scan_ns  TEXT,
    last_scan_at  TEXT,
    tree_sha256   TEXT,
    tree_files    INTEGER
  );
  `,
  `
  -- The observation state of src/tree/tree.ts (observeTree): per workspace, one blob of stat-cache
  -- slots aligned with the last path listing, stored in 32 KiB pages so that an observation rewrites
  -- only the pages that changed; and the validators that let the next observation reuse that listing
  -- instead of running git ls-files. Supersedes tree_cache rows for observations.
  CREATE TABLE tree_state (
    root     TEXT PRIMARY KEY,
    pages    INTEGER NOT NULL,
    listing  TEXT
  );
  CREATE TABLE tree_state_pages (
    root     TEXT NOT NULL,
    page     INTEGER NOT NULL,
    bytes    BLOB NOT NULL,
    PRIMARY KEY (root, page)
  );
  `,
  `
  -- Task briefs (src/continuity/brief.ts): one row per version per session. json = the brief model;
  -- rendered = the markdown whose pages (page_count, page_digests = JSON array of sha256) are read.
  CREATE TABLE briefs (
    session_id    TEXT NOT NULL,
    version       INTEGER NOT NULL,          -- 1, 2, 3, ... per session
    source        TEXT NOT NULL,             -- auto | human
    created_at    TEXT NOT NULL,
    json          TEXT NOT NULL,
    rendered      TEXT NOT NULL,
    page_count    INTEGER NOT NULL,
    page_digests  TEXT NOT NULL,
    PRIMARY KEY (session_id, version)
  );
  `,
  `
  -- Continuity: reads of brief pages proven from the transcript, deliveries, resume decisions.
  CREATE TABLE brief_reads (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id        TEXT NOT NULL,
    call_id           TEXT NOT NULL,
    version           INTEGER,
    page              INTEGER,
    ok                INTEGER NOT NULL,
    reasons_json      TEXT NOT NULL,
    compaction_seq    INTEGER NOT NULL,        -- compactions before the read's position in the transcript
    transcript_offset INTEGER,
    at                TEXT NOT NULL,
    UNIQUE (session_id, call_id)
  );
  CREATE TABLE deliveries (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL,
    at          TEXT NOT NULL,
    reason      TEXT NOT NULL,                 -- compact | resume
    kind        TEXT NOT NULL,                 -- full | native
    version     INTEGER,
    chars       INTEGER NOT NULL
  );
  CREATE TABLE resume_decisions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL,
    at          TEXT NOT NULL,
    decision    TEXT NOT NULL,                 -- native | full
    checks_json TEXT NOT NULL
  );
  ALTER TABLE sessions ADD COLUMN identity_json TEXT;          -- the latest turn identity seen
  ALTER TABLE sessions ADD COLUMN transcript_record_json TEXT; -- transcript identity + prefix hash at the last Stop
  `,
  `
  -- The workspace watcher (src/watch/daemon.ts): one process per workspace that records, from inotify
  -- events, which paths may have changed. A Close then stats only those paths (src/tree/tree.ts).
  -- watchers: the live instance (state starting | ready | unavailable); flushed_seq = the highest
  -- event sequence number written to watch_journal. watch_journal: one row per path (NULL = "observe
  -- everything": coverage was lost) and kind (c = content/attributes, r = entry created, removed or
  -- renamed, g = git metadata that the listing depends on).
  CREATE TABLE watchers (
    workspace    TEXT PRIMARY KEY,
    instance     TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    pid_start    TEXT NOT NULL,            -- process start time (src/ledger/ledger.ts selfId): pid reuse
    state        TEXT NOT NULL,
    flushed_seq  INTEGER NOT NULL DEFAULT 0,
    dirs         INTEGER NOT NULL DEFAULT 0,
    reason       TEXT,
    started_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
  );
  CREATE TABLE watch_journal (
    workspace  TEXT NOT NULL,
    instance   TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    path       TEXT,
    kind       TEXT NOT NULL
  );
  CREATE INDEX watch_journal_seq ON watch_journal(workspace, instance, seq);
  -- The watcher position an observation state is complete up to (NULL: taken without a watcher).
  ALTER TABLE tree_state ADD COLUMN watch_instance TEXT;
  ALTER TABLE tree_state ADD COLUMN watch_seq INTEGER;
  `,
  `
  -- Process containment at a trip (src/contain/index.ts): one containments row per trip (the agent
  -- process found, rounds, time taken, notes and errors, the processes deliberately spared) and one
  -- contained_processes row per process stopped and killed (why: agent_descendant | orphan_of_attempt
  -- | orphan_during_containment; action: killed | gone | stop_failed: … | kill_failed: …). latch
  -- verify / resume refuse a process (or ancestor) recorded here (pid + start_ticks: pid reuse).
  CREATE TABLE containments (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id     TEXT NOT NULL,
    compaction_seq INTEGER NOT NULL,
    at             TEXT NOT NULL,
    supported      INTEGER NOT NULL,
    agent_pid      INTEGER,
    agent_start    TEXT,
    agent_cmdline  TEXT,
    pid_ns         TEXT,                   -- the hook's (the agent's) pid namespace, e.g. pid:[4026531836]
    rounds         INTEGER NOT NULL,
    ms             REAL NOT NULL,
    notes_json     TEXT NOT NULL,
    errors_json    TEXT NOT NULL,
    spared_json    TEXT NOT NULL
  );
  CREATE INDEX containments_session ON containments(session_id, compaction_seq);
  CREATE TABLE contained_processes (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    containment_id INTEGER NOT NULL,
    session_id     TEXT NOT NULL,
    compaction_seq INTEGER NOT NULL,
    pid            INTEGER NOT NULL,
    start_ticks    TEXT NOT NULL,          -- /proc/PID/stat starttime (clock ticks since boot)
    start_ns       TEXT NOT NULL,          -- the same as wall-clock ns (~10 ms precise)
    exe            TEXT,
    cmdline        TEXT NOT NULL,          -- truncated to 300 characters
    why            TEXT NOT NULL,
    attempt_id     TEXT,
    action         TEXT NOT NULL,
    at             TEXT NOT NULL
  );
  CREATE INDEX contained_processes_pid ON contained_processes(pid, start_ticks);
  CREATE INDEX contained_processes_session ON contained_processes(session_id, compaction_seq);
  `,
  `
  -- Tamper evidence for the registration (src/tamper/index.ts), recorded by \`latch setup codex\`.
  -- registrations: one row per hooks file Latch registered in (kind user | project: its Latch handlers
  -- as canonical JSON, digests of the file, the hook parts of each config.toml) and one row '*' (kind
  -- install: node, entry, PATH directories and what latch/node/codex resolved to; one row '~touched'
  -- of kind log: files seen touched with unchanged content since setup). registration_files:
  -- every file compared, with its lstat identity (sig: kind:size:mtime_ns:ctime_ns:ino:dev, or
  -- 'absent'), sha256 and symlink target; 'ws:<workspace>' rows are a workspace's .codex/ files seen
  -- by hooks. registration_alarm: the last tamper found and the identities it was found at.
  CREATE TABLE registrations (
    scope        TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    recorded_at  TEXT NOT NULL,
    json         TEXT NOT NULL
  );
  CREATE TABLE registration_files (
    scope   TEXT NOT NULL,
    path    TEXT NOT NULL,
    role    TEXT NOT NULL,
    sig     TEXT NOT NULL,
    sha256  TEXT,
    link    TEXT,
    PRIMARY KEY (scope, path)
  );
  CREATE TABLE registration_alarm (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    sigs          TEXT NOT NULL,
    findings_json TEXT NOT NULL,
    at            TEXT NOT NULL
  );
  `,
  `
  -- Which agent a session belongs to (src/agents/index.ts): the reader of its transcript, the tool an
  -- export names. Sessions recorded before this column were all Codex's.
  ALTER TABLE sessions ADD COLUMN agent TEXT NOT NULL DEFAULT 'codex';
  `,
  `
  -- Compaction counting across a restore (src/session/records.ts hookSeqOf): when a human restores
  -- authority (verify, resume, evidence), restored_at and closed_seq (the highest compaction number a
  -- tripping source had reached) are recorded; a hook observation made after it opens a compaction
  -- above closed_seq, and a transcript boundary written after it that lands on a compaction settled
  -- by it trips again. Sessions restored before this migration: their last restore, and the counters
  -- as they are now (never lower than at that restore).
  ALTER TABLE sessions ADD COLUMN restored_at TEXT;
  ALTER TABLE sessions ADD COLUMN closed_seq INTEGER NOT NULL DEFAULT 0;
  UPDATE sessions SET restored_at = (
    SELECT MAX(t.at) FROM transitions t
     WHERE t.session_id = sessions.session_id AND t.to_state = 'mutable' AND t.from_state <> 'mutable');
  UPDATE sessions SET closed_seq = MAX(seen_post_compact, seen_start_compact, transcript_compactions,
    COALESCE((SELECT MAX(c.seq) FROM compactions c WHERE c.session_id = sessions.session_id AND c.tripped_at IS NOT NULL), 0))
   WHERE restored_at IS NOT NULL;

  -- Write-ahead compaction announcements (src/session/announce.ts): a compaction hook creates a file in
  -- $LATCH_HOME/announced/ before it opens the store; the hook that turns it into an observation
  -- records it here in the same transaction, then removes the file. A file already recorded here is
  -- only removed (never counted twice).
  CREATE TABLE announcements (
    id           TEXT PRIMARY KEY,     -- the file's name
    session_id   TEXT NOT NULL,
    source       TEXT NOT NULL,        -- pre_compact | post_compact | session_start
    announced_at TEXT,                 -- from the file's name (null: unreadable)
    seq          INTEGER NOT NULL,     -- the compaction it was counted as
    recorded_at  TEXT NOT NULL,
    by_own_hook  INTEGER NOT NULL      -- 1: by the hook that wrote it; 0: ingested by a later hook
  );
  CREATE INDEX announcements_session ON announcements(session_id);
  `,
  `
  -- What the call was to its agent's adapter (src/guard/events.ts ToolKind: shell, patch, mcp, agent,
  -- unknown), recorded at Start: the attribution (src/ledger/observe.ts) tells a sub-agent container
  -- (kind agent: Claude Code's Agent/Task, Codex's spawn_agent) from a writer without knowing any agent.
  -- Attempts recorded before: null (no container).
  ALTER TABLE attempts ADD COLUMN kind TEXT;
  `,
  `
  -- A compaction's identity across sessions (src/guard/compaction.ts): the id the agent gave the record
  -- that showed it in the transcript (Claude Code's compact_boundary uuid, which a --fork-session copies
  -- unchanged into the fork's transcript), when the transcript source saw one. A fork whose transcript
  -- opens with such a copy inherits the decision of the sessions that hold it: settled when a human's
  -- restore settled it in every one of them (inherited_from: their ids, JSON), tripped otherwise.
  -- Compactions recorded before: null (no identity; a fork of them trips, as it did).
  ALTER TABLE compactions ADD COLUMN boundary_id TEXT;
  ALTER TABLE compactions ADD COLUMN inherited_from TEXT;
  CREATE INDEX compactions_boundary ON compactions(boundary_id);
  `,
  `
  -- The bytes behind the sha256 of a fingerprinted file whose stat identity does not stand for its
  -- content (src/tamper/check.ts verifyContent): on tmpfs, overlayfs and the like, a hook compares
  -- the file with these bytes instead of hashing it, which would load node:crypto (~8 ms a hook). Only
  -- bytes Latch hashed itself are stored; small files only; rows no fingerprint names are dropped.
  CREATE TABLE registration_content (
    sha256 TEXT PRIMARY KEY,
    bytes  BLOB NOT NULL
  ) WITHOUT ROWID;
  `,
  `
  -- Who could have made the registration change of the alarm (src/contain/jobs.ts): 'agent' (a
  -- tool call ran when the file changed, or a job one started was alive), which latches the sessions,
  -- or 'human' (neither), which denies tracked calls until \`latch setup\` re-records, latching nothing.
  -- JSON {origin, why?}. Alarms recorded before: null (read as 'agent', as they were handled).
  ALTER TABLE registration_alarm ADD COLUMN origin_json TEXT;
  `,
  `
  -- \`latch doctor --repair\` (src/store/health.ts): a store found corrupt was moved aside, kept as
  -- evidence, and this fresh store made in its place with this row already in it. The fresh store
  -- cannot tell which sessions were latched, so a session first seen after the repair starts latched
  -- (reason store_repaired) unless it is provably new (src/guard/guard.ts createSession), until a
  -- human runs \`latch verify\`.
  CREATE TABLE store_repairs (
    id            INTEGER PRIMARY KEY,
    repaired_at   TEXT NOT NULL,
    problem       TEXT NOT NULL,       -- why the old store could not be used
    evidence_json TEXT NOT NULL        -- the files moved aside: [{from, to, bytes}]
  );
  `,
  `
  -- The workspace a human accepted at \`latch verify --accept-changes\` (src/checkpoint/evidence.ts):
  -- the tree and git state verify observed and listed before the confirmation, recorded with the
  -- restoring transition. A later verify of the session compares with it when it is newer than the
  -- latch's first checkpoint, so accepted differences are not listed again. One row per session (the
  -- latest acceptance); the transitions keep the history.
  CREATE TABLE accepted_baselines (
    session_id    TEXT PRIMARY KEY,
    transition_id INTEGER NOT NULL,        -- the verify transition that accepted it
    accepted_at   TEXT NOT NULL,           -- when that transition committed
    observed_at   TEXT NOT NULL,           -- when verify observed the tree it showed
    workspace     TEXT NOT NULL,
    git_head      TEXT,
    git_branch    TEXT,
    tree_sha256   TEXT NOT NULL,
    tree_files    INTEGER NOT NULL,
    tree_listing  BLOB NOT NULL,           -- encodeListing (src/tree/listing.ts), as checkpoints keep it
    changes       INTEGER NOT NULL         -- how many differences were accepted
  );
  `,
  `
  -- The agent process a session's hooks last ran under (src/contain/records.ts enrollAgent): its
  -- pid and start time (/proc stat field 22), written by the hook from its own ancestry at SessionStart
  -- and at a PreToolUse that looked. A Latch process that is not the agent's hook (the watcher's
  -- out-of-band trip, src/watch/sentry.ts) contains that process's jobs by it, when it still runs.
  -- cgroup: the group Latch made for that agent (src/contain/cgroup.ts), as the enrolling hook
  -- made or found it: a trip freezes that one, not one found by name (a job can plant a decoy).
  CREATE TABLE session_agents (
    session_id  TEXT PRIMARY KEY,
    pid         INTEGER NOT NULL,
    start_ticks TEXT NOT NULL,
    exe         TEXT,
    cmdline     TEXT NOT NULL,
    cgroup      TEXT,
    recorded_at TEXT NOT NULL
  ) WITHOUT ROWID;
  `,
];
