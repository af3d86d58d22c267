-- Gateways by minute, beside the daily and hourly rollups (clickhouse/0008 says why and how
-- reports read them).
CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_minute} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    minute                  DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    outbound_gateway_guid   LowCardinality(String),
    calls SimpleAggregateFunction(sum, UInt64),
    errors SimpleAggregateFunction(sum, UInt64),
    durations AggregateFunction(quantilesExactWeightedInterpolated(0.5, 0.95, 0.99), UInt32, UInt8),
    request_bytes_sum SimpleAggregateFunction(sum, UInt64),
    response_bytes_sum SimpleAggregateFunction(sum, UInt64)
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toMonday(minute)
ORDER BY (organization_guid, minute, outbound_gateway_guid)
TTL minute + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_minute_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_minute} AS
SELECT organization_guid, toStartOfMinute(toDateTime(created_at, 'UTC')) AS minute, outbound_gateway_guid, count() AS calls, countIf(status = 'error') AS errors, quantilesExactWeightedInterpolatedState(0.5, 0.95, 0.99)(if(duration_ms < 32, duration_ms, toUInt32(least(reinterpretAsFloat32(bitOr(bitAnd(reinterpretAsUInt32(toFloat32(duration_ms)), 4294443008), 262144)), 4294967295))), toUInt8(1)) AS durations,
    sum(toUInt64(request_bytes)) AS request_bytes_sum, sum(toUInt64(response_bytes)) AS response_bytes_sum
FROM ${TABLE:call_logs}
GROUP BY organization_guid, minute, outbound_gateway_guid;

INSERT INTO ${TABLE:call_log_usage_minute}
SELECT organization_guid, toStartOfMinute(toDateTime(created_at, 'UTC')) AS minute, outbound_gateway_guid, count() AS calls, countIf(status = 'error') AS errors, quantilesExactWeightedInterpolatedState(0.5, 0.95, 0.99)(if(duration_ms < 32, duration_ms, toUInt32(least(reinterpretAsFloat32(bitOr(bitAnd(reinterpretAsUInt32(toFloat32(duration_ms)), 4294443008), 262144)), 4294967295))), toUInt8(1)) AS durations,
    sum(toUInt64(request_bytes)) AS request_bytes_sum, sum(toUInt64(response_bytes)) AS response_bytes_sum
FROM ${TABLE:call_logs}
GROUP BY organization_guid, minute, outbound_gateway_guid;

${DISTRIBUTED:call_log_usage_minute:cityHash64(organization_guid)};
