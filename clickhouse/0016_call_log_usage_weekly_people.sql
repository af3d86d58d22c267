-- Users, teams, hosts and connections by week, for the reports by person over weeks (the
-- top users of 30 days): their whole weeks merge a week's row of each person where the
-- daily people rollup holds seven, and a person's rows are what such a report merges
-- (a user implies their team, host and connection, so a summary of users alone would
-- hold nearly as many rows as this). A week is 7 days from the Unix epoch (a Thursday,
-- 00:00 UTC), the unit src/core/logs/usage-rollups.ts cuts a window into; it is never a
-- report's bucket. Fed by the daily people rollup's inserts, as the summaries of 0015
-- are by theirs. Dropped first and built again from that rollup, so the file can run
-- again after a failure without counting a row twice (upgrade replicas together).
-- Measures as src/stores/usage-rollup-sql.ts spells them (test/logs-ddl.test.ts holds
-- them equal). Rows expire with their week's first day, a month's part at a time
-- (ttl_only_drop_parts), as the daily rollups' expire with their day.

DROP VIEW IF EXISTS ${TABLE:call_log_usage_weekly_people_mv} ${ON_CLUSTER} SYNC;

${DROP_DISTRIBUTED:call_log_usage_weekly_people};
DROP TABLE IF EXISTS ${TABLE:call_log_usage_weekly_people} ${ON_CLUSTER} SYNC;

CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_weekly_people} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    week                    DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
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
PARTITION BY toStartOfMonth(week)
ORDER BY (organization_guid, week, user_guid, team_guid, host_guid, gateway_connection_guid)
TTL week + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1, index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_weekly_people_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_weekly_people} AS
SELECT organization_guid, toDateTime(intDiv(toUInt32(day), 604800) * 604800, 'UTC') AS week, user_guid, team_guid, host_guid, gateway_connection_guid, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_daily_people}
GROUP BY organization_guid, week, user_guid, team_guid, host_guid, gateway_connection_guid;

INSERT INTO ${TABLE:call_log_usage_weekly_people}
SELECT organization_guid, toDateTime(intDiv(toUInt32(day), 604800) * 604800, 'UTC') AS week, user_guid, team_guid, host_guid, gateway_connection_guid, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_daily_people}
GROUP BY organization_guid, week, user_guid, team_guid, host_guid, gateway_connection_guid;

${DISTRIBUTED:call_log_usage_weekly_people:cityHash64(organization_guid)};
