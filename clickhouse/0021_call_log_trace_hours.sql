-- The hours each trace has calls in, per workspace, for query_logs' trace_id filter.
--
-- A trace id says nothing of when its calls were made, so a lookup through the trace's
-- bloom filter read every granule's filter over the whole range, a read that grows with
-- the rows. This table is sorted by (workspace, the id's 32-bit hash): a lookup reads a
-- granule of it to learn the hours, then call_logs within those hours only (query_logs
-- adds `toStartOfHour(created_at) GLOBAL IN (...)`, TRACE_HOURS in
-- src/core/logs/query-logs.ts). Another trace with the same hash adds its hours to the
-- read, never its rows (the trace_id condition stays). The trace's bloom filter goes:
-- the hours leave it a few granules to skip. Figures: docs/call-logs.md, "Session 40".
--
-- Fed by each INSERT into call_logs. A ReplacingMergeTree keeps one row of each
-- (workspace, hash, hour): the rows of a trace's hour in one INSERT are one when its part
-- is written, and those that repeat across parts (other INSERTs, or the backfill below
-- and the view writing the same) are merged away, harmless until then: the lookup only
-- asks which hours. So every statement can run again after a failure.
-- Backfilled from the rows before; rows inserted while the backfill runs are fed by the
-- view, which is made first. Rows expire a week after call_logs' would: call_logs drops
-- a weekly part once its last row expired, so a row lives up to six days past the
-- retention, and its hours must outlive it.
--
-- On a cluster each shard's view feeds its local table from its local rows, and the
-- query reads them through the Distributed table (GLOBAL IN: the hours are found once,
-- on the node that asks, and sent to the shards).
CREATE TABLE IF NOT EXISTS ${TABLE:call_log_trace_hours} ${ON_CLUSTER}
(
    organization_guid LowCardinality(String),
    trace_hash        UInt32 CODEC(Delta, ZSTD(1)),
    hour              DateTime('UTC') CODEC(T64, ZSTD(1))
)
ENGINE = ${ENGINE:ReplacingMergeTree}
PARTITION BY toMonday(hour)
ORDER BY (organization_guid, trace_hash, hour)
TTL hour + INTERVAL ${RETENTION_DAYS} DAY + INTERVAL 7 DAY
SETTINGS ttl_only_drop_parts = 1;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_trace_hours_mv} ${ON_CLUSTER} TO ${TABLE:call_log_trace_hours} AS
SELECT organization_guid, xxHash32(trace_id) AS trace_hash, toStartOfHour(created_at) AS hour
FROM ${TABLE:call_logs};

${DISTRIBUTED:call_log_trace_hours:cityHash64(organization_guid)};

-- By the names the queries use: on a cluster the Distributed tables, so every shard's
-- rows are backfilled (an hour may land on another shard than its rows: the lookup
-- reads every shard's).
INSERT INTO call_log_trace_hours
SELECT organization_guid, xxHash32(trace_id) AS trace_hash, toStartOfHour(created_at) AS hour
FROM call_logs
SETTINGS distributed_foreground_insert = 1;

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} DROP INDEX IF EXISTS idx_trace_id;
