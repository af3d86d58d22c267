-- call_logs at 50 bytes a row or less (issue 16; docs/call-logs.md, "Session 11: 47
-- bytes a row", has the figures of each step).
--
-- 1. session_id: a session spans many calls and a day holds a few hundred at a time,
--    so a dictionary stores it in about half what ZSTD over the text took. A host that
--    opens a session per call makes every value new; the column then costs about what
--    the text did.
-- 2. guid: ZSTD instead of LZ4 codes the 42 random bits of each UUIDv7 closer to their
--    size. Applies to parts written or merged from now on; nothing is rewritten.
-- 3. trace_id's bloom filter at 0.1 % false positives instead of 1 %: a little more
--    index, and a trace lookup reads about a tenth of the granules it read for nothing.
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
--    order a row's created_at cost about a third of the projection (a projection's
--    columns have no codec of their own). The forwarder now finds a batch's rows in the
--    table by ingested_at (the idx_ingested_at minmax index) instead of by their
--    created_at range, a small part of a record's cost (docs/forwarding.md). Dropped
--    first, so the file can run again after a failure.
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} DROP PROJECTION IF EXISTS forwarder_order;

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} ADD PROJECTION IF NOT EXISTS forwarder_order
(
    SELECT organization_guid, ingested_at, toString(guid)
    ORDER BY organization_guid, ingested_at, toString(guid)
);

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} MATERIALIZE PROJECTION forwarder_order;
