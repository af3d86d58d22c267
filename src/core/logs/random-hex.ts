import { randomFillSync } from 'node:crypto';

// One randomFillSync per 64 KiB instead of one randomBytes per id (a per-row
// randomBytes(8) measured about 11 µs, a third of the whole row encoding), turned into
// hex once per refill: an id is then a slice of that string, not a native call.
const POOL_BYTES = 64 * 1024;
const pool = Buffer.alloc(POOL_BYTES);
let poolHex = '';
let offset = POOL_BYTES;

/** `bytes` cryptographically random bytes as lowercase hex (trace and span ids), drawn from a pooled buffer. */
export function randomHex(bytes: number): string {
  if (offset + bytes > POOL_BYTES) {
    randomFillSync(pool);
    poolHex = pool.toString('hex');
    offset = 0;
  }
  const hex = poolHex.slice(offset * 2, (offset + bytes) * 2);
  offset += bytes;
  return hex;
}

let lastMs = -1;
let sequence = 0;
/** The guid's first 15 characters for lastMs: its time and version. */
let timePrefix = '';
const hex = (value: number, digits: number): string => value.toString(16).padStart(digits, '0');

/**
 * A UUIDv7 (RFC 9562) for a call-log row, laid out as the uuid package's v7
 * (ids.newGuid): 48 bits of the current time, a 32-bit sequence that starts at a random
 * value each millisecond and counts up within it, then 42 random bits. The uuid
 * package refills a 256-byte pool every 16 ids, about half a microsecond a row; this
 * draws from the pooled random bytes. The layout matters on disk: the rows of a batch
 * share their first 9 bytes, which ClickHouse compresses (fully random bits after the
 * time took 6 bytes a row more, in the guid column and the forwarder projection's
 * guid text). The time is when the row is written, not the call's, for the same reason.
 */
export function randomGuidV7(): string {
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    sequence = parseInt(randomHex(4), 16);
    const time = hex(now, 12);
    timePrefix = `${time.slice(0, 8)}-${time.slice(8)}-7`;
  } else {
    sequence = (sequence + 1) >>> 0;
  }
  const random = randomHex(6);
  // Bits of the sequence: 31-20 after the version nibble, 19-6 after the variant bits, 5-0 before the random bits.
  const lowByte = ((sequence & 0x3f) << 2) | (parseInt(random.slice(0, 2), 16) & 0x03);
  return `${timePrefix}${hex(sequence >>> 20, 3)}-${hex(0x8000 | ((sequence >>> 6) & 0x3fff), 4)}-${hex(lowByte, 2)}${random.slice(2)}`;
}
