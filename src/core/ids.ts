import { v7 as uuidv7 } from 'uuid';

/**
 * Every id the service assigns is a UUIDv7: time-ordered, so new rows land at the
 * end of btree indexes and ClickHouse sort keys instead of at random places.
 */
export const newGuid = (): string => uuidv7();

const GUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when `value` has the service's id format; anything else can name no resource. */
export const isGuid = (value: unknown): boolean => typeof value === 'string' && GUID_PATTERN.test(value);
