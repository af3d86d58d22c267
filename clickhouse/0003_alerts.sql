-- Alerts raised by the service (server validation, upstream auth and call
-- failures, OAuth refresh, collector export). Few rows; read newest first per
-- workspace. The structured parts are JSON text (debug_context already redacted).
CREATE TABLE IF NOT EXISTS ${TABLE:alerts} ${ON_CLUSTER}
(
    organization_guid    LowCardinality(String),
    guid                 UUID,
    created_at           DateTime64(3, 'UTC'),
    code                 LowCardinality(String),
    message_type         Enum8('info' = 1, 'warning' = 2, 'error' = 3),
    subject              String,
    message              String,
    related_resource_ids Array(String),
    dynamic_content      String CODEC(ZSTD(3)),
    debug_context        String CODEC(ZSTD(3)),
    related_context      String CODEC(ZSTD(3)),
    close_details        String CODEC(ZSTD(3)),
    INDEX idx_related related_resource_ids TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ${ENGINE:MergeTree}
PARTITION BY toYYYYMM(created_at)
ORDER BY (organization_guid, created_at, guid)
TTL toDateTime(created_at) + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1;

${DISTRIBUTED:alerts:cityHash64(guid)};
