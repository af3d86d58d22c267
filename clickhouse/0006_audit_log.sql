-- The admin audit log (contract 8.4): one row per admin operation that is not
-- read-only, on REST, MCP or the operator CLI, successful or refused after
-- authentication. Few rows next to the call log; read newest first per workspace.
-- request is the operation's input with every secret replaced by "[REDACTED]".
-- ingested_at is stamped by the server as the INSERT runs, like call_logs', so the
-- forwarder delivers audit records with the same horizon rule.
CREATE TABLE IF NOT EXISTS ${TABLE:audit_log} ${ON_CLUSTER}
(
    organization_guid  LowCardinality(String),
    guid               UUID,
    created_at         DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    ingested_at        DateTime64(3, 'UTC') DEFAULT now64(3) CODEC(DoubleDelta, ZSTD(1)),
    actor_user_guid    LowCardinality(String),
    actor_token_prefix LowCardinality(String),
    surface            LowCardinality(String),
    operation          LowCardinality(String),
    target_guids       Array(String),
    outcome            LowCardinality(String),
    status             UInt16,
    request            String CODEC(ZSTD(3)),
    source_ip          String CODEC(ZSTD(1)),
    user_agent         String CODEC(ZSTD(1)),
    INDEX idx_targets target_guids TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_ingested_at ingested_at TYPE minmax GRANULARITY 1
)
ENGINE = ${ENGINE:MergeTree}
PARTITION BY toYYYYMM(created_at)
ORDER BY (organization_guid, created_at, guid)
TTL toDateTime(created_at) + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1, non_replicated_deduplication_window = 10000;

${DISTRIBUTED:audit_log:cityHash64(guid)};
