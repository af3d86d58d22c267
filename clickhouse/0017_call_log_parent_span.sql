-- The host's span on each call-log row: the span id of the `traceparent` a host sent,
-- '' when it sent none (a new trace). The forwarder exports it as the span's
-- `parentSpanId`, so a call's span sits under the host's in the customer's tracing
-- (src/forwarder/record-sql.ts). Random hex when present, nothing when absent: rows of
-- hosts that send no trace context cost nothing more.
--
-- On a cluster the Replicated local tables get the column, and so does the
-- Distributed table (as 0007 explains; on a single node the second statement repeats
-- the first on the same table).
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} ADD COLUMN IF NOT EXISTS parent_span_id String DEFAULT '' CODEC(ZSTD(1)) AFTER span_id;

ALTER TABLE call_logs ${ON_CLUSTER} ADD COLUMN IF NOT EXISTS parent_span_id String DEFAULT '' CODEC(ZSTD(1)) AFTER span_id;
