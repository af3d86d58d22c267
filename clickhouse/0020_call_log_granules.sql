-- call_logs in granules of 2,048 rows and compressed blocks of at least 16 KiB, with a
-- bloom filter over each row's (user, server) pair.
--
-- A page of a user's calls to one server, when the pair is rare (a user who seldom
-- calls that server), read every row's filter columns back to its 51st match, and
-- every granule holding a match whole: the user's and the server's own bloom filters
-- skip nothing, each being common. The pair's filter skips the granules without the
-- pair, and a granule (and its blocks) of 2,048 rows costs a quarter of one of 8,192
-- to read for its one match. At 100M rows a pair with 0.0014 % of the calls read in
-- 66 ms, 30 so; other pages within 3 ms; 1.6 bytes a row more (docs/call-logs.md,
-- "Session 39").
--
-- index_granularity cannot change on a table, so the table is made again with the new
-- settings and takes the old one's parts (hard links, no copy): they keep their
-- 8,192-row granules until merged (`OPTIMIZE TABLE call_logs FINAL` rewrites them at
-- once). The views that feed the rollups follow the name call_logs. Each statement can
-- run again after a failure: the new table is made from scratch and takes every part
-- before the names are exchanged, and after the exchange the one dropped holds the
-- same parts. Rows another process inserts while this runs, between the parts'
-- attaching and the exchange, are lost (upgrade replicas together, as for 0012).
--
-- On a cluster the Replicated local tables are exchanged; an ATTACH on a Replicated
-- table runs on one replica of each shard and reaches the others through ZooKeeper.
-- The new local table keeps the ZooKeeper path it was created with (named
-- call_logs_rebuilt_local): a later rebuild needs another name.
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} ADD INDEX IF NOT EXISTS idx_user_server cityHash64(user_guid, inbound_server_guid) TYPE bloom_filter(0.01) GRANULARITY 1;

DROP TABLE IF EXISTS ${TABLE:call_logs_rebuilt} ${ON_CLUSTER} SYNC;

CREATE TABLE IF NOT EXISTS ${TABLE:call_logs_rebuilt} ${ON_CLUSTER} AS ${TABLE:call_logs}
ENGINE = ${ENGINE:MergeTree}
PARTITION BY toMonday(created_at)
ORDER BY (organization_guid, created_at, guid)
TTL toDateTime(created_at) + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1, non_replicated_deduplication_window = 10000, index_granularity = 2048, min_compress_block_size = 16384;

ALTER TABLE ${TABLE:call_logs_rebuilt} ${ON_CLUSTER} ATTACH PARTITION ALL FROM ${TABLE:call_logs};

EXCHANGE TABLES ${TABLE:call_logs} AND ${TABLE:call_logs_rebuilt} ${ON_CLUSTER};

DROP TABLE IF EXISTS ${TABLE:call_logs_rebuilt} ${ON_CLUSTER} SYNC;

-- The pair's filter for the parts written before (a mutation, in the background).
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} MATERIALIZE INDEX idx_user_server;

-- The trace and span filters per four granules, 8,192 rows as before: a lookup reads
-- every granule's filter over its whole range, and four times as many filters of a
-- quarter of the rows cost about 3 ms more at 100M rows. Built again before the
-- service serves (the mutation waits), so no lookup runs without them; the old parts'
-- filters cover 32,768 rows until those parts merge.
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} DROP INDEX IF EXISTS idx_trace_id;

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} ADD INDEX IF NOT EXISTS idx_trace_id trace_id TYPE bloom_filter(0.001) GRANULARITY 4 FIRST;

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} MATERIALIZE INDEX idx_trace_id SETTINGS mutations_sync = 2;

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} DROP INDEX IF EXISTS idx_span_id;

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} ADD INDEX IF NOT EXISTS idx_span_id span_id TYPE bloom_filter(0.01) GRANULARITY 4 AFTER idx_trace_id;

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} MATERIALIZE INDEX idx_span_id SETTINGS mutations_sync = 2;
