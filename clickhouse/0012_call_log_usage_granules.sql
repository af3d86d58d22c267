-- The usage rollups again, as 0011 built them, with smaller granules and the minute
-- rollup sorted by gateway before minute. A report reads a few of a rollup's rows at
-- the edges of its window (an hour's minutes, a day's hours), but a granule of 8,192
-- rows was read whole, its duration arrays (a few hundred counts a row) decoded for
-- every row: about 7 ms for the 30 minutes at one end of a window. With 256-row
-- granules a read decodes little more than the rows it keeps. A day of one gateway by
-- minute read the minutes of every gateway; with the gateway first in the sort key it
-- reads that gateway's range only. A minute read of every gateway (a report without a
-- gateway filter) reads the same rows either way. Figures in docs/call-logs.md,
-- "Usage reports".
-- As in 0011, every view is dropped first and each rollup built again from call_logs
-- (or from the finer rollup), so the file can run again after a failure; rows another
-- process inserts while this runs miss the rollups (upgrade replicas together). The
-- measures and the views' SELECTs are 0011's, spelled again (test/logs-ddl.test.ts
-- holds them to src/stores/usage-rollup-sql.ts).

DROP VIEW IF EXISTS ${TABLE:call_log_usage_daily_mv} ${ON_CLUSTER} SYNC;

DROP VIEW IF EXISTS ${TABLE:call_log_usage_daily_people_mv} ${ON_CLUSTER} SYNC;

DROP VIEW IF EXISTS ${TABLE:call_log_usage_hourly_mv} ${ON_CLUSTER} SYNC;

DROP VIEW IF EXISTS ${TABLE:call_log_usage_minute_mv} ${ON_CLUSTER} SYNC;

DROP VIEW IF EXISTS ${TABLE:call_log_usage_hourly_people_mv} ${ON_CLUSTER} SYNC;

${DROP_DISTRIBUTED:call_log_usage_hourly};
DROP TABLE IF EXISTS ${TABLE:call_log_usage_hourly} ${ON_CLUSTER} SYNC;

${DROP_DISTRIBUTED:call_log_usage_daily};
DROP TABLE IF EXISTS ${TABLE:call_log_usage_daily} ${ON_CLUSTER} SYNC;

${DROP_DISTRIBUTED:call_log_usage_minute};
DROP TABLE IF EXISTS ${TABLE:call_log_usage_minute} ${ON_CLUSTER} SYNC;

${DROP_DISTRIBUTED:call_log_usage_hourly_people};
DROP TABLE IF EXISTS ${TABLE:call_log_usage_hourly_people} ${ON_CLUSTER} SYNC;

${DROP_DISTRIBUTED:call_log_usage_daily_people};
DROP TABLE IF EXISTS ${TABLE:call_log_usage_daily_people} ${ON_CLUSTER} SYNC;

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
    durations               AggregateFunction(sumForEach, Array(UInt64)) CODEC(ZSTD(3)),
    request_bytes_sum       SimpleAggregateFunction(sum, UInt64),
    response_bytes_sum      SimpleAggregateFunction(sum, UInt64)
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toMonday(hour)
ORDER BY (organization_guid, hour, outbound_gateway_guid, inbound_server_guid, tool_name, type, status)
TTL hour + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1, index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_hourly_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_hourly} AS
SELECT organization_guid, hour, outbound_gateway_guid, inbound_server_guid, tool_name, type, status, sum(bucket_calls) AS calls, sum(bucket_errors) AS errors, sumForEachState(arrayPushBack(arrayWithConstant(duration_bucket, toUInt64(0)), bucket_calls)) AS durations,
    sum(bucket_request_bytes) AS request_bytes_sum, sum(bucket_response_bytes) AS response_bytes_sum
FROM (
    SELECT organization_guid, toStartOfHour(toDateTime(created_at, 'UTC')) AS hour, outbound_gateway_guid, inbound_server_guid, tool_name, type, status, toUInt16(if(duration_ms < 32, duration_ms, bitShiftRight(reinterpretAsUInt32(toFloat32(duration_ms)), 19) - 2080)) AS duration_bucket, count() AS bucket_calls, countIf(status = 'error') AS bucket_errors,
    sum(toUInt64(request_bytes)) AS bucket_request_bytes, sum(toUInt64(response_bytes)) AS bucket_response_bytes
    FROM ${TABLE:call_logs}
    GROUP BY organization_guid, hour, outbound_gateway_guid, inbound_server_guid, tool_name, type, status, duration_bucket
)
GROUP BY organization_guid, hour, outbound_gateway_guid, inbound_server_guid, tool_name, type, status;

INSERT INTO ${TABLE:call_log_usage_hourly}
SELECT organization_guid, hour, outbound_gateway_guid, inbound_server_guid, tool_name, type, status, sum(bucket_calls) AS calls, sum(bucket_errors) AS errors, sumForEachState(arrayPushBack(arrayWithConstant(duration_bucket, toUInt64(0)), bucket_calls)) AS durations,
    sum(bucket_request_bytes) AS request_bytes_sum, sum(bucket_response_bytes) AS response_bytes_sum
FROM (
    SELECT organization_guid, toStartOfHour(toDateTime(created_at, 'UTC')) AS hour, outbound_gateway_guid, inbound_server_guid, tool_name, type, status, toUInt16(if(duration_ms < 32, duration_ms, bitShiftRight(reinterpretAsUInt32(toFloat32(duration_ms)), 19) - 2080)) AS duration_bucket, count() AS bucket_calls, countIf(status = 'error') AS bucket_errors,
    sum(toUInt64(request_bytes)) AS bucket_request_bytes, sum(toUInt64(response_bytes)) AS bucket_response_bytes
    FROM ${TABLE:call_logs}
    GROUP BY organization_guid, hour, outbound_gateway_guid, inbound_server_guid, tool_name, type, status, duration_bucket
)
GROUP BY organization_guid, hour, outbound_gateway_guid, inbound_server_guid, tool_name, type, status
SETTINGS max_bytes_before_external_group_by = 268435456;

${DISTRIBUTED:call_log_usage_hourly:cityHash64(organization_guid)};

CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_daily} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    day                     DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    outbound_gateway_guid   LowCardinality(String),
    inbound_server_guid     LowCardinality(String),
    tool_name               LowCardinality(String),
    type                    LowCardinality(String),
    status                  Enum8('ok' = 1, 'error' = 2),
    calls                   SimpleAggregateFunction(sum, UInt64),
    errors                  SimpleAggregateFunction(sum, UInt64),
    durations               AggregateFunction(sumForEach, Array(UInt64)) CODEC(ZSTD(3)),
    request_bytes_sum       SimpleAggregateFunction(sum, UInt64),
    response_bytes_sum      SimpleAggregateFunction(sum, UInt64)
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toStartOfMonth(day)
ORDER BY (organization_guid, day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status)
TTL day + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1, index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_daily_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_daily} AS
SELECT organization_guid, toStartOfDay(hour) AS day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_hourly}
GROUP BY organization_guid, day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status;

INSERT INTO ${TABLE:call_log_usage_daily}
SELECT organization_guid, toStartOfDay(hour) AS day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_hourly}
GROUP BY organization_guid, day, outbound_gateway_guid, inbound_server_guid, tool_name, type, status
SETTINGS max_bytes_before_external_group_by = 268435456;

${DISTRIBUTED:call_log_usage_daily:cityHash64(organization_guid)};

CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_minute} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    minute                  DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    outbound_gateway_guid   LowCardinality(String),
    calls                   SimpleAggregateFunction(sum, UInt64),
    errors                  SimpleAggregateFunction(sum, UInt64),
    durations               AggregateFunction(sumForEach, Array(UInt64)) CODEC(ZSTD(3)),
    request_bytes_sum       SimpleAggregateFunction(sum, UInt64),
    response_bytes_sum      SimpleAggregateFunction(sum, UInt64)
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toMonday(minute)
ORDER BY (organization_guid, outbound_gateway_guid, minute)
TTL minute + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1, index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_minute_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_minute} AS
SELECT organization_guid, minute, outbound_gateway_guid, sum(bucket_calls) AS calls, sum(bucket_errors) AS errors, sumForEachState(arrayPushBack(arrayWithConstant(duration_bucket, toUInt64(0)), bucket_calls)) AS durations,
    sum(bucket_request_bytes) AS request_bytes_sum, sum(bucket_response_bytes) AS response_bytes_sum
FROM (
    SELECT organization_guid, toStartOfMinute(toDateTime(created_at, 'UTC')) AS minute, outbound_gateway_guid, toUInt16(if(duration_ms < 32, duration_ms, bitShiftRight(reinterpretAsUInt32(toFloat32(duration_ms)), 19) - 2080)) AS duration_bucket, count() AS bucket_calls, countIf(status = 'error') AS bucket_errors,
    sum(toUInt64(request_bytes)) AS bucket_request_bytes, sum(toUInt64(response_bytes)) AS bucket_response_bytes
    FROM ${TABLE:call_logs}
    GROUP BY organization_guid, minute, outbound_gateway_guid, duration_bucket
)
GROUP BY organization_guid, minute, outbound_gateway_guid;

INSERT INTO ${TABLE:call_log_usage_minute}
SELECT organization_guid, minute, outbound_gateway_guid, sum(bucket_calls) AS calls, sum(bucket_errors) AS errors, sumForEachState(arrayPushBack(arrayWithConstant(duration_bucket, toUInt64(0)), bucket_calls)) AS durations,
    sum(bucket_request_bytes) AS request_bytes_sum, sum(bucket_response_bytes) AS response_bytes_sum
FROM (
    SELECT organization_guid, toStartOfMinute(toDateTime(created_at, 'UTC')) AS minute, outbound_gateway_guid, toUInt16(if(duration_ms < 32, duration_ms, bitShiftRight(reinterpretAsUInt32(toFloat32(duration_ms)), 19) - 2080)) AS duration_bucket, count() AS bucket_calls, countIf(status = 'error') AS bucket_errors,
    sum(toUInt64(request_bytes)) AS bucket_request_bytes, sum(toUInt64(response_bytes)) AS bucket_response_bytes
    FROM ${TABLE:call_logs}
    GROUP BY organization_guid, minute, outbound_gateway_guid, duration_bucket
)
GROUP BY organization_guid, minute, outbound_gateway_guid
SETTINGS max_bytes_before_external_group_by = 268435456;

${DISTRIBUTED:call_log_usage_minute:cityHash64(organization_guid)};

CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_hourly_people} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    hour                    DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    user_guid               LowCardinality(String),
    team_guid               LowCardinality(String),
    host_guid               LowCardinality(String),
    gateway_connection_guid LowCardinality(String),
    calls                   SimpleAggregateFunction(sum, UInt64),
    errors                  SimpleAggregateFunction(sum, UInt64),
    durations               AggregateFunction(sumForEach, Array(UInt64)) CODEC(ZSTD(3)),
    request_bytes_sum       SimpleAggregateFunction(sum, UInt64),
    response_bytes_sum      SimpleAggregateFunction(sum, UInt64)
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toMonday(hour)
ORDER BY (organization_guid, hour, user_guid, team_guid, host_guid, gateway_connection_guid)
TTL hour + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1, index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_hourly_people_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_hourly_people} AS
SELECT organization_guid, hour, user_guid, team_guid, host_guid, gateway_connection_guid, sum(bucket_calls) AS calls, sum(bucket_errors) AS errors, sumForEachState(arrayPushBack(arrayWithConstant(duration_bucket, toUInt64(0)), bucket_calls)) AS durations,
    sum(bucket_request_bytes) AS request_bytes_sum, sum(bucket_response_bytes) AS response_bytes_sum
FROM (
    SELECT organization_guid, toStartOfHour(toDateTime(created_at, 'UTC')) AS hour, user_guid, team_guid, host_guid, gateway_connection_guid, toUInt16(if(duration_ms < 32, duration_ms, bitShiftRight(reinterpretAsUInt32(toFloat32(duration_ms)), 19) - 2080)) AS duration_bucket, count() AS bucket_calls, countIf(status = 'error') AS bucket_errors,
    sum(toUInt64(request_bytes)) AS bucket_request_bytes, sum(toUInt64(response_bytes)) AS bucket_response_bytes
    FROM ${TABLE:call_logs}
    GROUP BY organization_guid, hour, user_guid, team_guid, host_guid, gateway_connection_guid, duration_bucket
)
GROUP BY organization_guid, hour, user_guid, team_guid, host_guid, gateway_connection_guid;

INSERT INTO ${TABLE:call_log_usage_hourly_people}
SELECT organization_guid, hour, user_guid, team_guid, host_guid, gateway_connection_guid, sum(bucket_calls) AS calls, sum(bucket_errors) AS errors, sumForEachState(arrayPushBack(arrayWithConstant(duration_bucket, toUInt64(0)), bucket_calls)) AS durations,
    sum(bucket_request_bytes) AS request_bytes_sum, sum(bucket_response_bytes) AS response_bytes_sum
FROM (
    SELECT organization_guid, toStartOfHour(toDateTime(created_at, 'UTC')) AS hour, user_guid, team_guid, host_guid, gateway_connection_guid, toUInt16(if(duration_ms < 32, duration_ms, bitShiftRight(reinterpretAsUInt32(toFloat32(duration_ms)), 19) - 2080)) AS duration_bucket, count() AS bucket_calls, countIf(status = 'error') AS bucket_errors,
    sum(toUInt64(request_bytes)) AS bucket_request_bytes, sum(toUInt64(response_bytes)) AS bucket_response_bytes
    FROM ${TABLE:call_logs}
    GROUP BY organization_guid, hour, user_guid, team_guid, host_guid, gateway_connection_guid, duration_bucket
)
GROUP BY organization_guid, hour, user_guid, team_guid, host_guid, gateway_connection_guid
SETTINGS max_bytes_before_external_group_by = 268435456;

${DISTRIBUTED:call_log_usage_hourly_people:cityHash64(organization_guid)};

CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_daily_people} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    day                     DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    user_guid               LowCardinality(String),
    team_guid               LowCardinality(String),
    host_guid               LowCardinality(String),
    gateway_connection_guid LowCardinality(String),
    calls                   SimpleAggregateFunction(sum, UInt64),
    errors                  SimpleAggregateFunction(sum, UInt64),
    durations               AggregateFunction(sumForEach, Array(UInt64)) CODEC(ZSTD(3)),
    request_bytes_sum       SimpleAggregateFunction(sum, UInt64),
    response_bytes_sum      SimpleAggregateFunction(sum, UInt64)
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toStartOfMonth(day)
ORDER BY (organization_guid, day, user_guid, team_guid, host_guid, gateway_connection_guid)
TTL day + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1, index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_daily_people_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_daily_people} AS
SELECT organization_guid, toStartOfDay(hour) AS day, user_guid, team_guid, host_guid, gateway_connection_guid, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_hourly_people}
GROUP BY organization_guid, day, user_guid, team_guid, host_guid, gateway_connection_guid;

INSERT INTO ${TABLE:call_log_usage_daily_people}
SELECT organization_guid, toStartOfDay(hour) AS day, user_guid, team_guid, host_guid, gateway_connection_guid, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_hourly_people}
GROUP BY organization_guid, day, user_guid, team_guid, host_guid, gateway_connection_guid
SETTINGS max_bytes_before_external_group_by = 268435456;

${DISTRIBUTED:call_log_usage_daily_people:cityHash64(organization_guid)};
