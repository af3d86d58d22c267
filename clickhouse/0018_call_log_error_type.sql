-- What kind of failure a failed call was, as the OpenTelemetry conventions for MCP
-- name it (error.type): the JSON-RPC error code the host was answered with ("-32602"),
-- `tool_error` for a tool result with isError, `_OTHER` for an answer cut short; ''
-- for a call that succeeded (and rows stored before this column). The forwarder exports
-- it as error.type, and a code also as rpc.response.status_code
-- (src/core/logs/call-log-schema.ts). A handful of distinct values: LowCardinality.
--
-- On a cluster the Replicated local tables get the column, and so does the
-- Distributed table (as 0007 explains; on a single node the second statement repeats
-- the first on the same table).
ALTER TABLE ${TABLE:call_logs} ${ON_CLUSTER} ADD COLUMN IF NOT EXISTS error_type LowCardinality(String) DEFAULT '' AFTER error_message;

ALTER TABLE call_logs ${ON_CLUSTER} ADD COLUMN IF NOT EXISTS error_type LowCardinality(String) DEFAULT '' AFTER error_message;
