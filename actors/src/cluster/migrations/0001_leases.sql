-- The nodes of a cluster and the leases of their sessions (docs/CLUSTER.md).
CREATE TABLE cluster_nodes (
    node_id     text PRIMARY KEY,
    advertise   text NOT NULL,
    lease_until timestamptz NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cluster_leases (
    session_id text PRIMARY KEY,
    node_id    text NOT NULL,
    epoch      bigint NOT NULL,
    expires_at timestamptz NOT NULL,
    -- Replica nodes in push order: the first holds every acknowledged turn.
    replicas   text[] NOT NULL
);

CREATE INDEX cluster_leases_node ON cluster_leases (node_id);
CREATE INDEX cluster_leases_first_replica ON cluster_leases ((replicas[1]), expires_at);
