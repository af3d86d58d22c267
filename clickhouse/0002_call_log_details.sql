-- Request/response bodies and (redacted) headers, kept apart from the thin row so
-- the common page never reads them. Same key as call_logs: a page's details are
-- fetched by workspace, the page's time range and its guids.
CREATE TABLE IF NOT EXISTS ${TABLE:call_log_details} ${ON_CLUSTER}
(
    organization_guid LowCardinality(String),
    guid              UUID,
    created_at        DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    request_body      String CODEC(ZSTD(3)),
    response_body     String CODEC(ZSTD(3)),
    request_headers   String CODEC(ZSTD(3)),
    response_headers  String CODEC(ZSTD(3))
)
ENGINE = ${ENGINE:MergeTree}
PARTITION BY toMonday(created_at)
ORDER BY (organization_guid, created_at, guid)
TTL toDateTime(created_at) + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1, non_replicated_deduplication_window = 10000;

${DISTRIBUTED:call_log_details:cityHash64(guid)};
