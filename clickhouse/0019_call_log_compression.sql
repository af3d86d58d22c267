-- call_logs' small-domain columns, which named no codec, compressed with ZSTD(1) instead of
-- the server's default (LZ4 on chDB and a self-managed server): their dictionary keys
-- cost 0.3-0.6 bytes a row less each, 46.92 -> 43.54 bytes a row on 10M rows of a
-- 100M-row seed, and a trace lookup reads as fast as before (docs/call-logs.md, "Session
-- 33: ZSTD for the columns without a codec"). Not the table's default codec
-- (`default_compression_codec`), which would take the forwarder projection's guid from
-- 9.05 to 6.10 bytes a row but also compresses the skip indexes: a trace lookup reads
-- the whole bloom filter of trace_id, and took 53-66 ms p50 at 100M rows against 33-38.
-- Applies to parts written or merged from now on; nothing is rewritten. The key column
-- (organization_guid) and the host revision's column, at nothing a row, keep theirs.
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER}
    MODIFY COLUMN type CODEC(ZSTD(1)),
    MODIFY COLUMN method CODEC(ZSTD(1)),
    MODIFY COLUMN tool_name CODEC(ZSTD(1)),
    MODIFY COLUMN status CODEC(ZSTD(1)),
    MODIFY COLUMN error_type CODEC(ZSTD(1)),
    MODIFY COLUMN gateway_connection_guid CODEC(ZSTD(1)),
    MODIFY COLUMN user_guid CODEC(ZSTD(1)),
    MODIFY COLUMN outbound_gateway_guid CODEC(ZSTD(1)),
    MODIFY COLUMN inbound_server_guid CODEC(ZSTD(1)),
    MODIFY COLUMN host_guid CODEC(ZSTD(1)),
    MODIFY COLUMN server_container_guid CODEC(ZSTD(1)),
    MODIFY COLUMN team_guid CODEC(ZSTD(1));
