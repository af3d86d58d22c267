-- Users, teams, hosts and connections by day, the keys the traffic rollups leave out
-- (clickhouse/0008 says why and how reports read them).
CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_daily_people} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    day                     DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    user_guid               LowCardinality(String),
    team_guid               LowCardinality(String),
    host_guid               LowCardinality(String),
    gateway_connection_guid LowCardinality(String),
    calls SimpleAggregateFunction(sum, UInt64),
    errors SimpleAggregateFunction(sum, UInt64),
    durations AggregateFunction(quantilesExactWeightedInterpolated(0.5, 0.95, 0.99), UInt32, UInt8),
    request_bytes_sum SimpleAggregateFunction(sum, UInt64),
    response_bytes_sum SimpleAggregateFunction(sum, UInt64)
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toStartOfMonth(day)
ORDER BY (organization_guid, day, user_guid, team_guid, host_guid, gateway_connection_guid)
TTL day + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_daily_people_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_daily_people} AS
SELECT organization_guid, toStartOfDay(toDateTime(created_at, 'UTC')) AS day, user_guid, team_guid, host_guid, gateway_connection_guid, count() AS calls, countIf(status = 'error') AS errors, quantilesExactWeightedInterpolatedState(0.5, 0.95, 0.99)(if(duration_ms < 32, duration_ms, toUInt32(least(reinterpretAsFloat32(bitOr(bitAnd(reinterpretAsUInt32(toFloat32(duration_ms)), 4294443008), 262144)), 4294967295))), toUInt8(1)) AS durations,
    sum(toUInt64(request_bytes)) AS request_bytes_sum, sum(toUInt64(response_bytes)) AS response_bytes_sum
FROM ${TABLE:call_logs}
GROUP BY organization_guid, day, user_guid, team_guid, host_guid, gateway_connection_guid;

INSERT INTO ${TABLE:call_log_usage_daily_people}
SELECT organization_guid, toStartOfDay(toDateTime(created_at, 'UTC')) AS day, user_guid, team_guid, host_guid, gateway_connection_guid, count() AS calls, countIf(status = 'error') AS errors, quantilesExactWeightedInterpolatedState(0.5, 0.95, 0.99)(if(duration_ms < 32, duration_ms, toUInt32(least(reinterpretAsFloat32(bitOr(bitAnd(reinterpretAsUInt32(toFloat32(duration_ms)), 4294443008), 262144)), 4294967295))), toUInt8(1)) AS durations,
    sum(toUInt64(request_bytes)) AS request_bytes_sum, sum(toUInt64(response_bytes)) AS response_bytes_sum
FROM ${TABLE:call_logs}
GROUP BY organization_guid, day, user_guid, team_guid, host_guid, gateway_connection_guid;

${DISTRIBUTED:call_log_usage_daily_people:cityHash64(organization_guid)};
