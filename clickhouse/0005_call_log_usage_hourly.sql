-- Usage reports (get_usage_report) read this hourly rollup for the whole hours of a
-- window and the raw call_logs rows only for the partial hours at its ends, for
-- minute buckets and for the keys it does not keep. One row per workspace, hour,
-- gateway, server, tool, type and status; counts and bytes are exact sums, durations
-- a map of bucketed value to count (exact below 32 ms, else within 3.125 %:
-- DURATION_BUCKET_SQL in src/stores/usage-rollup-sql.ts, the same expression). Users,
-- teams, hosts and connections are left out on purpose: with them the rollup held
-- half as many rows as call_logs and merged slower than the raw rows read; without
-- them it holds about a tenth (docs/call-logs.md, "Usage reports").
CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_hourly} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    hour                    DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    outbound_gateway_guid   LowCardinality(String),
    inbound_server_guid     LowCardinality(String),
    tool_name               LowCardinality(String),
    type                    LowCardinality(String),
    status                  Enum8('ok' = 1, 'error' = 2),
    calls                   SimpleAggregateFunction(sum, UInt64),
    errors                  SimpleAggregateFunction(sum, UInt64),
    durations               AggregateFunction(quantilesExactWeightedInterpolated(0.5, 0.95, 0.99), UInt32, UInt8),
    request_bytes_sum       SimpleAggregateFunction(sum, UInt64),
    response_bytes_sum      SimpleAggregateFunction(sum, UInt64)
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toMonday(hour)
ORDER BY (organization_guid, hour, outbound_gateway_guid, inbound_server_guid, tool_name, type, status)
TTL hour + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1;

-- Fed at ingest: every INSERT into call_logs (on a cluster, into each shard's local
-- table) adds its rows' states here.
CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_hourly_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_hourly} AS
SELECT
    organization_guid,
    toStartOfHour(toDateTime(created_at, 'UTC')) AS hour,
    outbound_gateway_guid,
    inbound_server_guid,
    tool_name,
    type,
    status,
    count() AS calls,
    countIf(status = 'error') AS errors,
    quantilesExactWeightedInterpolatedState(0.5, 0.95, 0.99)(if(duration_ms < 32, duration_ms, toUInt32(least(reinterpretAsFloat32(bitOr(bitAnd(reinterpretAsUInt32(toFloat32(duration_ms)), 4294443008), 262144)), 4294967295))), toUInt8(1)) AS durations,
    sum(toUInt64(request_bytes)) AS request_bytes_sum,
    sum(toUInt64(response_bytes)) AS response_bytes_sum
FROM ${TABLE:call_logs}
GROUP BY organization_guid, hour, outbound_gateway_guid, inbound_server_guid, tool_name, type, status;

-- Rows stored before the view existed (this file runs at start-up, before ingest).
INSERT INTO ${TABLE:call_log_usage_hourly}
SELECT
    organization_guid,
    toStartOfHour(toDateTime(created_at, 'UTC')) AS hour,
    outbound_gateway_guid,
    inbound_server_guid,
    tool_name,
    type,
    status,
    count() AS calls,
    countIf(status = 'error') AS errors,
    quantilesExactWeightedInterpolatedState(0.5, 0.95, 0.99)(if(duration_ms < 32, duration_ms, toUInt32(least(reinterpretAsFloat32(bitOr(bitAnd(reinterpretAsUInt32(toFloat32(duration_ms)), 4294443008), 262144)), 4294967295))), toUInt8(1)) AS durations,
    sum(toUInt64(request_bytes)) AS request_bytes_sum,
    sum(toUInt64(response_bytes)) AS response_bytes_sum
FROM ${TABLE:call_logs}
GROUP BY organization_guid, hour, outbound_gateway_guid, inbound_server_guid, tool_name, type, status;

${DISTRIBUTED:call_log_usage_hourly:cityHash64(organization_guid)};
