import { z } from 'zod';

/**
 * Schema pieces every operation group shares. Path ids are plain strings here:
 * the executor answers an id of the wrong form with 404 before validation, as the
 * contract asks.
 */
export const Id = (description: string) => z.string().min(1).max(100).describe(description);

export const Name = (description = 'Display name') => z.string().trim().min(1, 'must not be empty').max(200).describe(description);

/** ISO 8601 UTC with milliseconds, the only time format in responses. */
export const iso = (d: Date | string): string => (d instanceof Date ? d : new Date(d)).toISOString();
export const isoOrNull = (d: Date | string | null | undefined): string | null => (d == null ? null : iso(d));

export const IsoTime = z.string().describe('ISO 8601 UTC time, e.g. 2026-11-21T10:00:00.000Z');

/** The contract's list envelope: always an object, never a bare array. */
export const ItemsOf = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item) });

export const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true } as const;
export const CREATES = { readOnlyHint: false, destructiveHint: false, idempotentHint: false } as const;
export const CHANGES = { readOnlyHint: false, destructiveHint: false, idempotentHint: true } as const;
export const DESTROYS = { readOnlyHint: false, destructiveHint: true, idempotentHint: true } as const;

/** Postgres unique-violation, raised when a concurrent request won a race. */
export const isUniqueViolation = (err: unknown): boolean => (err as { code?: string } | null)?.code === '23505';
