-- Thin call-log rows: one per MCP call through a gateway. The common page
-- (query_logs without includeDetail) reads only this table.
--
-- Sort key: workspace first, then time, then the row guid as tie-breaker, so
-- every query (always scoped to one workspace, nearly always newest first) reads
-- a contiguous range in order. Weekly partitions: a read costs about 1 ms per part it
-- touches, so daily ones made a 30-day page read 30+ parts; TTL drops whole weeks
-- (rows live at most 6 days past LOG_RETENTION_DAYS).
-- Guid columns other than `guid` are LowCardinality strings: a workspace has few
-- gateways, servers, users and connections, so each costs about a byte per row;
-- an absent guid is stored as '' (the API returns null).
CREATE TABLE IF NOT EXISTS ${TABLE:call_logs} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    guid                    UUID,
    created_at              DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    ingested_at             DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    type                    LowCardinality(String),
    method                  LowCardinality(String),
    tool_name               LowCardinality(String),
    status                  Enum8('ok' = 1, 'error' = 2),
    error_message           String CODEC(ZSTD(3)),
    duration_ms             UInt32 CODEC(T64, ZSTD(1)),
    request_bytes           UInt32 CODEC(T64, ZSTD(1)),
    response_bytes          UInt32 CODEC(T64, ZSTD(1)),
    gateway_connection_guid LowCardinality(String),
    user_guid               LowCardinality(String),
    outbound_gateway_guid   LowCardinality(String),
    inbound_server_guid     LowCardinality(String),
    host_guid               LowCardinality(String),
    server_container_guid   LowCardinality(String),
    team_guid               LowCardinality(String),
    trace_id                String CODEC(ZSTD(1)),
    span_id                 String CODEC(ZSTD(1)),
    session_id              String CODEC(ZSTD(1)),
    INDEX idx_trace_id trace_id TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_id span_id TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_connection gateway_connection_guid TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_user user_guid TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_gateway outbound_gateway_guid TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_server inbound_server_guid TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_host host_guid TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_container server_container_guid TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_team team_guid TYPE bloom_filter(0.01) GRANULARITY 1,
    -- The forwarder pages by (ingested_at, guid) per workspace; minmax skips old granules.
    INDEX idx_ingested_at ingested_at TYPE minmax GRANULARITY 1
)
ENGINE = ${ENGINE:MergeTree}
PARTITION BY toMonday(created_at)
ORDER BY (organization_guid, created_at, guid)
TTL toDateTime(created_at) + INTERVAL ${RETENTION_DAYS} DAY
-- The deduplication window makes a spool replay of an already inserted batch a no-op
-- (the writer sends the spool segment's name as insert_deduplication_token).
SETTINGS ttl_only_drop_parts = 1, non_replicated_deduplication_window = 10000;

${DISTRIBUTED:call_logs:cityHash64(guid)};
