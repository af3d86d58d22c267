-- call_logs at 50 bytes a row or less (issue 16; docs/call-logs.md, "Session 11: bytes
-- per row", has the figures of each step). Measured on 11M seeded rows, after
-- OPTIMIZE FINAL: 56.95 bytes a row before, 47.93 after.
--
-- 1. session_id: a session spans about 500 calls and a day holds a few hundred at a
--    time, so a dictionary stores it in about 1.9 bytes where ZSTD over the text took
--    3.6. A host that opens a session per call makes every value new; the column then
--    costs about what the text did.
-- 2. guid: ZSTD instead of LZ4 codes the 42 random bits of each UUIDv7 closer to their
--    size (6.1 bytes a row where LZ4 took 9.05). Applies to parts written or merged
--    from now on; nothing is rewritten.
-- 3. trace_id's bloom filter at 0.1 % false positives instead of 1 %: 0.22 bytes a row
--    more, and a trace lookup reads about a tenth of the granules it read for nothing.
--
-- On a cluster the Replicated local tables change; the Distributed table takes the new
-- session_id type too, as rows inserted through it are shaped by its structure (on a
-- single node the second statement repeats the first on the same table).
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} MODIFY COLUMN session_id LowCardinality(String) CODEC(ZSTD(1));

ALTER TABLE call_logs ${ON_CLUSTER} MODIFY COLUMN session_id LowCardinality(String) CODEC(ZSTD(1));

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} MODIFY COLUMN guid UUID CODEC(ZSTD(1));

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} DROP INDEX IF EXISTS idx_trace_id;

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} ADD INDEX IF NOT EXISTS idx_trace_id trace_id TYPE bloom_filter(0.001) GRANULARITY 1 FIRST;

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} MATERIALIZE INDEX idx_trace_id;

-- 4. The forwarder_order projection (0004) without created_at: in the projection's
--    order a row's created_at took 4.6 bytes (a projection's columns have no codec of
--    their own), which is the whole key again. The forwarder now finds a batch's rows in
--    the table by ingested_at (the idx_ingested_at minmax index) instead of by their
--    created_at range: 15-20 % more time a batch read, a few percent of a record's cost
--    (docs/forwarding.md). Dropped first, so the file can run again after a failure.
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} DROP PROJECTION IF EXISTS forwarder_order;

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} ADD PROJECTION IF NOT EXISTS forwarder_order
(
    SELECT organization_guid, ingested_at, toString(guid)
    ORDER BY organization_guid, ingested_at, toString(guid)
);

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} MATERIALIZE PROJECTION forwarder_order;
