-- The usage rollups again, their durations kept as counts per duration bucket
-- (arrays merged by sumForEach) instead of quantilesExactWeightedInterpolated's map
-- states, which cost about 25 ns an entry to merge: a 30-day report by user merged
-- 10,757 daily states in 55-70 ms at 10M rows; the arrays merge and finalise in about
-- 24 ms (docs/call-logs.md, "Usage reports"). With them, users, teams, hosts and
-- connections by hour (call_log_usage_hourly_people), so that a report by person reads
-- its window's partial days from a rollup, not raw; the daily people rollup is fed
-- from it, as the daily traffic rollup is from the hourly one: one aggregation of the
-- inserted rows for both.
-- A rollup is derived from call_logs: each is dropped with its view and built again
-- from call_logs (or from the finer rollup), so the file can run again after a
-- failure without counting a row twice. Every view is dropped first, so no insert
-- feeds a table being rebuilt; rows another process inserts while this runs miss the
-- rollups (migrations run at start-up, before the process writes: upgrade replicas
-- together). Measures as src/stores/usage-rollup-sql.ts spells them for the reports'
-- reads, each view's SELECT spelled again for its backfill, as a migration is literal
-- SQL (test/logs-ddl.test.ts holds them all equal); same retention as call_logs. The
-- arrays are mostly zeros between a few counts: ZSTD(3) keeps them at half of LZ4's
-- size (a minute rollup's 3.5 bytes per call_logs row at 10M rows became 1.5). A
-- backfill's grouping spills to disk past 256 MiB, so rebuilding from many rows does
-- not take the process's memory.

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
SETTINGS ttl_only_drop_parts = 1;

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
SETTINGS ttl_only_drop_parts = 1;

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
ORDER BY (organization_guid, minute, outbound_gateway_guid)
TTL minute + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1;

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
SETTINGS ttl_only_drop_parts = 1;

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
SETTINGS ttl_only_drop_parts = 1;

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
