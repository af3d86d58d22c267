-- The forwarder's batches found by counting rows per ingest instead of by the row
-- guids in ingest order.
--
-- forwarder_order (0004, 0014) held every row's guid again, sorted by ingested_at, so
-- that a batch's last key could be read in order: about 9 bytes a row, a fifth of
-- call_logs (a projection's columns take no codec of their own, so the guid stays
-- under LZ4 there). A batch only needs to know how far its rows reach: this projection
-- holds one row per workspace and ingested_at (one INSERT's rows share ingested_at)
-- with the count, a few bytes per INSERT. The forwarder adds the counts after the
-- checkpoint until they reach the batch size, and reads the rows up to that
-- ingested_at from the table (docs/forwarding.md, "Counted batches").
--
-- Added and built before the old one goes, so the file can run again after a failure.
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} ADD PROJECTION IF NOT EXISTS forwarder_counts
(
    SELECT organization_guid, ingested_at, count()
    GROUP BY organization_guid, ingested_at
);

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} MATERIALIZE PROJECTION forwarder_counts;

ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} DROP PROJECTION IF EXISTS forwarder_order;
