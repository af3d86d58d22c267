-- The hourly traffic rollup without the gateway: servers, tools, types and statuses by
-- hour, for the reports that neither group nor filter by gateway (a week by tool and
-- hour; the partial days of a 30-day report). Without the gateway in its key an hour
-- holds about a third of the hourly rollup's rows, and such a report merges that many
-- fewer duration arrays (docs/call-logs.md, "Usage reports", has the figures).
-- src/core/logs/usage-rollups.ts lists it before call_log_usage_hourly, so a report
-- that may read either reads this one.
-- Fed by the hourly rollup's inserts, as the daily rollup is: the rows an insert adds
-- to call_logs are grouped once, and this view only merges that block's states again.
-- Dropped first and built again from the hourly rollup, so the file can run again after
-- a failure without counting an hour twice; rows another process inserts while this
-- runs miss it (upgrade replicas together, as for 0011 and 0012). Measures as
-- src/stores/usage-rollup-sql.ts spells them (test/logs-ddl.test.ts holds them equal).

DROP VIEW IF EXISTS ${TABLE:call_log_usage_hourly_tools_mv} ${ON_CLUSTER} SYNC;

${DROP_DISTRIBUTED:call_log_usage_hourly_tools};
DROP TABLE IF EXISTS ${TABLE:call_log_usage_hourly_tools} ${ON_CLUSTER} SYNC;

CREATE TABLE IF NOT EXISTS ${TABLE:call_log_usage_hourly_tools} ${ON_CLUSTER}
(
    organization_guid       LowCardinality(String),
    hour                    DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
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
ORDER BY (organization_guid, hour, inbound_server_guid, tool_name, type, status)
TTL hour + INTERVAL ${RETENTION_DAYS} DAY
SETTINGS ttl_only_drop_parts = 1, index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${TABLE:call_log_usage_hourly_tools_mv} ${ON_CLUSTER} TO ${TABLE:call_log_usage_hourly_tools} AS
SELECT organization_guid, hour, inbound_server_guid, tool_name, type, status, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_hourly}
GROUP BY organization_guid, hour, inbound_server_guid, tool_name, type, status;

INSERT INTO ${TABLE:call_log_usage_hourly_tools}
SELECT organization_guid, hour, inbound_server_guid, tool_name, type, status, sum(calls) AS calls, sum(errors) AS errors, sumForEachMergeState(durations) AS durations,
    sum(request_bytes_sum) AS request_bytes_sum, sum(response_bytes_sum) AS response_bytes_sum
FROM ${TABLE:call_log_usage_hourly}
GROUP BY organization_guid, hour, inbound_server_guid, tool_name, type, status
SETTINGS max_bytes_before_external_group_by = 268435456;

${DISTRIBUTED:call_log_usage_hourly_tools:cityHash64(organization_guid)};
