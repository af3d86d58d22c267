-- More usage rollups beside the hourly one (0005; this file and 0009, 0010), so that a report reads few rows
-- whatever its window: whole days from a daily rollup, the partial days at the ends
-- from the hourly one, the partial hours from the minute one where it serves, and
-- only the partial minutes raw (src/core/logs/usage-rollups.ts declares each table's
-- grain and keys; docs/call-logs.md, "Usage reports", has the figures).
--   call_log_usage_daily: the hourly rollup's keys by day, fed by the hourly rollup itself.
--   call_log_usage_minute: gateways by minute (a gateway's live traffic); with the server
--   too it held a third as many rows as call_logs at 2M rows a month.
--   call_log_usage_daily_people: user, team, host and connection by day (who uses what),
--   the keys the hourly rollup leaves out.
-- Measures as in 0005, spelled as src/stores/usage-rollup-sql.ts spells them for the
-- reports' reads (test/logs-ddl.test.ts holds them equal); same retention as call_logs.
-- One rollup a file: a file is recorded once all its statements ran, so a backfill that
-- failed is retried without running another rollup's backfill twice.
CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_daily} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    day                     DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    outbound_gateway_guid   LowCardinality(String),
    inbound_server_guid     LowCardinality(String),
    tool_name               LowCardinality(String),
    type                    LowCardinality(String),
    status                  Enum8('ok' = 1, 'error' = 2),
    calls SimpleAggregateFunction(sum, UInt64),
    errors SimpleAggregateFunction(sum, UInt64),
    durations AggregateFunction(quantilesExactWeightedInterpolated(0.5, 0.95, 0.99), UInt32, UInt8),
    request_bytes_sum SimpleAggregateFunction(sum, UInt64),
    response_bytes_sum SimpleAggregateFunction(sum, UInt64)
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toStartOfMonth(day)
ORDER BY (organization_guid, day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status)
TTL day + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1;

-- Fed by what the hourly rollup's view inserts (a view on a view's table): the
-- hourly states merged again, without reading a raw row twice.
CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_daily_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_daily} AS
SELECT organization_guid, toStartOfDay(hour) AS day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status, sum(calls) AS calls, sum(errors) AS errors, quantilesExactWeightedInterpolatedMergeState(0.5, 0.95, 0.99)(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_hourly}
GROUP BY organization_guid, day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status;

INSERT INTO ${TABLE:call_log_usage_daily}
SELECT organization_guid, toStartOfDay(hour) AS day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status, sum(calls) AS calls, sum(errors) AS errors, quantilesExactWeightedInterpolatedMergeState(0.5, 0.95, 0.99)(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_hourly}
GROUP BY organization_guid, day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status;

${DISTRIBUTED:call_log_usage_daily:cityHash64(organization_guid)};
