-- Three summaries of the traffic rollups, for the reports a dashboard asks most: the
-- workspace's totals by day and by hour (every report without keys or filters: totals,
-- a timeline), servers, types and statuses by day (a report by server or status), and
-- tools by hour (a week by tool). Their reads merge a fraction of the arrays the
-- rollups they summarise hold: a 30-day window's whole days are 30 rows here against
-- about 8,500 of the daily rollup at 10M rows a month (docs/call-logs.md, "Usage
-- reports", has the figures). src/core/logs/usage-rollups.ts lists each before the
-- rollups of its grain that keep more keys, so a report reads the smallest that serves it.
-- Each is fed by the inserts of the rollup it summarises, as the daily rollup is: the
-- views merge that insert's states again, a few hundred rows for a 50,000-row insert
-- into call_logs. Dropped first and built again from those rollups, so the file can run
-- again after a failure without counting a row twice; a row another process inserts
-- between a view's creation and its backfill counts twice (upgrade replicas together,
-- as for 0011 to 0013). Measures
-- as src/stores/usage-rollup-sql.ts spells them (test/logs-ddl.test.ts holds them equal).

DROP VIEW IF EXISTS ${TABLE:call_log_usage_daily_totals_mv} ${ON_CLUSTER} SYNC;
DROP VIEW IF EXISTS ${TABLE:call_log_usage_daily_servers_mv} ${ON_CLUSTER} SYNC;
DROP VIEW IF EXISTS ${TABLE:call_log_usage_hourly_totals_mv} ${ON_CLUSTER} SYNC;
DROP VIEW IF EXISTS ${TABLE:call_log_usage_hourly_tool_names_mv} ${ON_CLUSTER} SYNC;

${DROP_DISTRIBUTED:call_log_usage_daily_totals};
DROP TABLE IF EXISTS ${TABLE:call_log_usage_daily_totals} ${ON_CLUSTER} SYNC;
${DROP_DISTRIBUTED:call_log_usage_daily_servers};
DROP TABLE IF EXISTS ${TABLE:call_log_usage_daily_servers} ${ON_CLUSTER} SYNC;
${DROP_DISTRIBUTED:call_log_usage_hourly_totals};
DROP TABLE IF EXISTS ${TABLE:call_log_usage_hourly_totals} ${ON_CLUSTER} SYNC;
${DROP_DISTRIBUTED:call_log_usage_hourly_tool_names};
DROP TABLE IF EXISTS ${TABLE:call_log_usage_hourly_tool_names} ${ON_CLUSTER} SYNC;

CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_daily_totals} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    day                     DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    calls                   SimpleAggregateFunction(sum, UInt64),
    errors                  SimpleAggregateFunction(sum, UInt64),
    durations               AggregateFunction(sumForEach, Array(UInt64)) CODEC(ZSTD(3)),
    request_bytes_sum       SimpleAggregateFunction(sum, UInt64),
    response_bytes_sum      SimpleAggregateFunction(sum, UInt64)
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toStartOfMonth(day)
ORDER BY (organization_guid, day)
TTL day + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1, index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_daily_totals_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_daily_totals} AS
SELECT organization_guid, day, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_daily}
GROUP BY organization_guid, day;

INSERT INTO ${TABLE:call_log_usage_daily_totals}
SELECT organization_guid, day, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_daily}
GROUP BY organization_guid, day;

${DISTRIBUTED:call_log_usage_daily_totals:cityHash64(organization_guid)};

CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_daily_servers} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    day                     DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    inbound_server_guid     LowCardinality(String),
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
ORDER BY (organization_guid, day, inbound_server_guid, type, status)
TTL day + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1, index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_daily_servers_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_daily_servers} AS
SELECT organization_guid, day, inbound_server_guid, type, status, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_daily}
GROUP BY organization_guid, day, inbound_server_guid, type, status;

INSERT INTO ${TABLE:call_log_usage_daily_servers}
SELECT organization_guid, day, inbound_server_guid, type, status, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_daily}
GROUP BY organization_guid, day, inbound_server_guid, type, status;

${DISTRIBUTED:call_log_usage_daily_servers:cityHash64(organization_guid)};

CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_hourly_totals} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    hour                    DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    calls                   SimpleAggregateFunction(sum, UInt64),
    errors                  SimpleAggregateFunction(sum, UInt64),
    durations               AggregateFunction(sumForEach, Array(UInt64)) CODEC(ZSTD(3)),
    request_bytes_sum       SimpleAggregateFunction(sum, UInt64),
    response_bytes_sum      SimpleAggregateFunction(sum, UInt64)
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toMonday(hour)
ORDER BY (organization_guid, hour)
TTL hour + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1, index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_hourly_totals_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_hourly_totals} AS
SELECT organization_guid, hour, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_hourly_tools}
GROUP BY organization_guid, hour;

INSERT INTO ${TABLE:call_log_usage_hourly_totals}
SELECT organization_guid, hour, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_hourly_tools}
GROUP BY organization_guid, hour;

${DISTRIBUTED:call_log_usage_hourly_totals:cityHash64(organization_guid)};

CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_hourly_tool_names} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    hour                    DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    tool_name               LowCardinality(String),
    calls                   SimpleAggregateFunction(sum, UInt64),
    errors                  SimpleAggregateFunction(sum, UInt64),
    durations               AggregateFunction(sumForEach, Array(UInt64)) CODEC(ZSTD(3)),
    request_bytes_sum       SimpleAggregateFunction(sum, UInt64),
    response_bytes_sum      SimpleAggregateFunction(sum, UInt64)
)
ENGINE = ${ENGINE:AggregatingMergeTree}
PARTITION BY toMonday(hour)
ORDER BY (organization_guid, hour, tool_name)
TTL hour + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1, index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_hourly_tool_names_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_hourly_tool_names} AS
SELECT organization_guid, hour, tool_name, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_hourly_tools}
GROUP BY organization_guid, hour, tool_name;

INSERT INTO ${TABLE:call_log_usage_hourly_tool_names}
SELECT organization_guid, hour, tool_name, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_hourly_tools}
GROUP BY organization_guid, hour, tool_name;

${DISTRIBUTED:call_log_usage_hourly_tool_names:cityHash64(organization_guid)};
