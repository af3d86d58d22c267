-- call_logs' columns without a codec of their own compressed with ZSTD(1) instead of the
-- server's default (LZ4 on chDB and a self-managed server): the forwarder_order
-- projection's columns (a projection's columns take no codec of their own: its row guid
-- cost 9.05 bytes a row under LZ4, 6.10 under ZSTD) and the LowCardinality columns (their
-- dictionary keys: 0.3-0.6 bytes a row less each). 46.96 -> 40.46 bytes a row on 10M rows
-- of a 100M seed, reads of those columns the same (docs/call-logs.md, "Session 33: ZSTD
-- for the columns without a codec"). A table's own default codec needs ClickHouse 25.4 or
-- later; servers before ClickHouse #101784 (2026) accept it but write with the server's
-- default. Applies to parts written or merged from now on; nothing is rewritten.
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} MODIFY SETTING default_compression_codec = 'ZSTD(1)';
