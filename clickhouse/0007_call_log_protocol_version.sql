-- The host's MCP protocol revision on each call-log row (issue 12): the revision a
-- 2025 host's session negotiated, 2026-07-28 for a host of that revision, '' where
-- unknown (rows stored before this column, seed-logs). query_logs returns it and the
-- forwarder exports it as mcp.protocol.version (src/core/logs/call-log-schema.ts).
-- A handful of distinct values: LowCardinality, about a byte per row.
--
-- On a cluster the Replicated local tables get the column, and so does the
-- Distributed table, whose structure the rows inserted through it must match (on a
-- single node the second statement repeats the first on the same table, which
-- changes nothing).
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} ADD COLUMN IF NOT EXISTS protocol_version LowCardinality(String) DEFAULT '' AFTER session_id;

ALTER TABLE call_logs ${ON_CLUSTER} ADD COLUMN IF NOT EXISTS protocol_version LowCardinality(String) DEFAULT '' AFTER session_id;
