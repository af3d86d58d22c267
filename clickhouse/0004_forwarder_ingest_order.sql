-- What the forwarder needs from call_logs (docs/forwarding.md, "Delivery").
--
-- 1. ingested_at is stamped by the server when it runs the INSERT (the writer leaves
--    the column out). Every row of an INSERT then carries a time at or after the
--    moment that INSERT became a running query on this server, on the same clock as
--    the forwarder's cut-off (now64() and system.processes), so the forwarder can
--    tell which rows can no longer appear behind its checkpoint without guessing a
--    settle window. On a cluster the Distributed table fills the default for the
--    rows inserted through it, so it gets the same default (on a single node the
--    second statement repeats the first on the same table, which changes nothing).
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} MODIFY COLUMN ingested_at DEFAULT now64(3);

ALTER TABLE call_logs ${ON_CLUSTER} MODIFY COLUMN ingested_at DEFAULT now64(3);

-- 2. The forwarder pages each workspace by (ingested_at, toString(guid)) while the
--    table is sorted by (organization_guid, created_at, guid): without help, every
--    batch sorted every row after the checkpoint, a cost that grows with the backlog
--    (an outage's worth of rows made each batch slower). This projection holds only
--    the keys in the forwarder's order (toString(guid) itself is in the key, so the
--    read stops after the batch instead of finishing a sort); the forwarder finds
--    the batch's last key and created_at range in it, then reads the rows from the
--    table by that range. It carries no other column, so no query that needs one
--    (query_logs, summaries) can be planned onto it. About 20 bytes a row.
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} ADD PROJECTION IF NOT EXISTS forwarder_order
(
    SELECT organization_guid, ingested_at, toString(guid), created_at
    ORDER BY organization_guid, ingested_at, toString(guid)
);

-- Builds the projection for the rows already stored (new parts get it as they are written).
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} MATERIALIZE PROJECTION forwarder_order;
