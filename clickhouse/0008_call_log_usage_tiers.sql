-- More usage rollups beside the hourly one (0005), so that a report reads few rows
-- whatever its window: whole days from a daily rollup, the partial days at the ends
-- from the hourly one, the partial hours from the minute one where it serves, and
-- only the partial minutes raw (src/core/logs/usage-rollups.ts declares each table's
-- grain and keys; docs/call-logs.md, "Usage reports", has the figures).
--   call_log_usage_daily: the hourly rollup's keys by day, fed by the hourly rollup itself.
--   call_log_usage_minute: gateways by minute (a gateway's live traffic); with the server
--   too it held a third as many rows as call_logs at 2M rows a month.
--   call_log_usage_daily_people: user, team, host and connection by day (who uses what),
--   the keys the hourly rollup leaves out.
-- Measures as in 0005 (src/stores/usage-rollup-sql.ts); same retention as call_logs.
CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_daily} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    day                     DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    outbound_gateway_guid   LowCardinality(String),
    inbound_server_guid     LowCardinality(String),
    tool_name               LowCardinality(String),
    type                    LowCardinality(String),
    status                  Enum8('ok' = 1, 'error' = 2),
    ${USAGE_MEASURE_COLUMNS}
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toStartOfMonth(day)
ORDER BY (organization_guid, day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status)
TTL day + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1;

-- Fed by what the hourly rollup's view inserts (a view on a view's table): the
-- hourly states merged again, without reading a raw row twice.
CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_daily_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_daily} AS
SELECT organization_guid, toStartOfDay(hour) AS day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status, ${USAGE_MEASURES_OF_STATES}
FROM ${TABLE:call_log_usage_hourly}
GROUP BY organization_guid, day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status;

INSERT INTO ${TABLE:call_log_usage_daily}
SELECT organization_guid, toStartOfDay(hour) AS day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status, ${USAGE_MEASURES_OF_STATES}
FROM ${TABLE:call_log_usage_hourly}
GROUP BY organization_guid, day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status;

${DISTRIBUTED:call_log_usage_daily:cityHash64(organization_guid)};

CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_minute} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    minute                  DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    outbound_gateway_guid   LowCardinality(String),
    ${USAGE_MEASURE_COLUMNS}
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toMonday(minute)
ORDER BY (organization_guid, minute, outbound_gateway_guid)
TTL minute + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_minute_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_minute} AS
SELECT organization_guid, toStartOfMinute(toDateTime(created_at, 'UTC')) AS minute, outbound_gateway_guid, ${USAGE_MEASURES_OF_ROWS}
FROM ${TABLE:call_logs}
GROUP BY organization_guid, minute, outbound_gateway_guid;

INSERT INTO ${TABLE:call_log_usage_minute}
SELECT organization_guid, toStartOfMinute(toDateTime(created_at, 'UTC')) AS minute, outbound_gateway_guid, ${USAGE_MEASURES_OF_ROWS}
FROM ${TABLE:call_logs}
GROUP BY organization_guid, minute, outbound_gateway_guid;

${DISTRIBUTED:call_log_usage_minute:cityHash64(organization_guid)};

CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_daily_people} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    day                     DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    user_guid               LowCardinality(String),
    team_guid               LowCardinality(String),
    host_guid               LowCardinality(String),
    gateway_connection_guid LowCardinality(String),
    ${USAGE_MEASURE_COLUMNS}
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toStartOfMonth(day)
ORDER BY (organization_guid, day, user_guid, team_guid, host_guid, gateway_connection_guid)
TTL day + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_daily_people_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_daily_people} AS
SELECT organization_guid, toStartOfDay(toDateTime(created_at, 'UTC')) AS day, user_guid, team_guid, host_guid, gateway_connection_guid, ${USAGE_MEASURES_OF_ROWS}
FROM ${TABLE:call_logs}
GROUP BY organization_guid, day, user_guid, team_guid, host_guid, gateway_connection_guid;

INSERT INTO ${TABLE:call_log_usage_daily_people}
SELECT organization_guid, toStartOfDay(toDateTime(created_at, 'UTC')) AS day, user_guid, team_guid, host_guid, gateway_connection_guid, ${USAGE_MEASURES_OF_ROWS}
FROM ${TABLE:call_logs}
GROUP BY organization_guid, day, user_guid, team_guid, host_guid, gateway_connection_guid;

${DISTRIBUTED:call_log_usage_daily_people:cityHash64(organization_guid)};
