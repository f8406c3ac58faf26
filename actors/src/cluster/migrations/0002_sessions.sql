-- The session list of the whole cluster: each row written by the node
-- that owns the session (docs/CLUSTER.md, "One list").
CREATE TABLE cluster_sessions (
    session_id text PRIMARY KEY,
    node_id    text NOT NULL,
    updated_us bigint NOT NULL,
    archived   boolean NOT NULL,
    pinned     boolean NOT NULL,
    status     text NOT NULL,
    agent_id   text NOT NULL,
    source     text NOT NULL,
    channel    text,
    grp        text,
    project_id text NOT NULL,
    -- The registry row as index.json holds it.
    row        text NOT NULL
);

CREATE INDEX cluster_sessions_order ON cluster_sessions (archived, updated_us DESC, session_id);
