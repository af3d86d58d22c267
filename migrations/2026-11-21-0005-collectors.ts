import { sql, type Kysely } from 'kysely';

// Frozen in time: imports nothing from the app.
export async function up(db: Kysely<any>): Promise<void> {
  // One collector per workspace (set_otel_configuration). URLs are stored exactly as
  // given; logs_format null means "saved before the field existed" and reads as otlp.
  // Header values live encrypted in `secrets`; only their names are kept here.
  await db.schema
    .createTable('collector_configurations')
    .addColumn('organization_guid', 'uuid', (c) => c.primaryKey().references('organizations.guid').onDelete('cascade'))
    .addColumn('logs_url', 'text')
    .addColumn('logs_format', 'text') // null | otlp | collector_hec
    .addColumn('traces_url', 'text')
    .addColumn('header_names', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .addColumn('headers_secret_guid', 'uuid')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  // The forwarder's durable progress, one row per workspace and signal (logs, traces),
  // so an outage of one collector URL never holds back the other signal.
  // - checkpoint (ingested_at, guid): the last call-log row the collector accepted;
  //   rows are scanned strictly after it, in (ingested_at, guid) order.
  // - lease: the process forwarding this cursor; taken with one atomic UPDATE
  //   (expired or already ours), so two processes never send the same batch.
  // - next_attempt_at / attempts: backoff and Retry-After survive a restart.
  // - *_total: durable counters (records), also exported per process on /metrics.
  await db.schema
    .createTable('forwarder_cursors')
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('signal', 'text', (c) => c.notNull()) // logs | traces
    .addColumn('checkpoint_at', 'timestamptz', (c) => c.notNull())
    .addColumn('checkpoint_guid', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`'epoch'::timestamptz`))
    .addColumn('next_attempt_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`'epoch'::timestamptz`))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('sent_total', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('retried_total', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('failed_total', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('rejected_total', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('forwarder_cursors_pk', ['organization_guid', 'signal'])
    .execute();
  await db.schema.createIndex('forwarder_cursors_due_idx').on('forwarder_cursors').column('next_attempt_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('forwarder_cursors').ifExists().execute();
  await db.schema.dropTable('collector_configurations').ifExists().execute();
}
