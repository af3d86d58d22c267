import { createHash } from 'node:crypto';

/**
 * Names the gateway shows: `<server-slug>__<name>`. Slugs are unique within a
 * gateway; qualified names stay within MCP's limit for tool names (128 characters
 * of A-Z a-z 0-9 _ - .), which hosts may hold them to: a name outside it is rewritten into it
 * and suffixed with a hash of the original, so it stays unique and can be resolved back.
 */
export const SEPARATOR = '__';
export const MAX_NAME_LENGTH = 128;
const MAX_SLUG_LENGTH = 32;
const HASH_LENGTH = 8;
/** Hex characters of an assignment's guid that tell apart servers whose names give one slug. */
const SUFFIX_LENGTH = 4;

/** A server name as a slug: lower-case letters, digits and single hyphens, at most 32 characters. */
export function slugify(name: string): string {
  const slug = name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, MAX_SLUG_LENGTH)
    .replace(/-+$/, '');
  return slug || 'server';
}

/**
 * Unique slugs for a gateway's assignments, each from its server's name. A slug one
 * assignment alone has stays bare; where several share one, each gets `--` and the end
 * of its assignment's guid (longer until unique). A bare slug never holds `--`
 * (slugify makes single hyphens), so no server's name can take a suffixed slug, and
 * adding or removing an assignment never moves a name to another server: a name that
 * became ambiguous stops resolving.
 */
export function uniqueSlugs(assignments: readonly { serverName: string; guid: string }[]): string[] {
  const bases = assignments.map((a) => slugify(a.serverName));
  const tails = assignments.map((a) => a.guid.toLowerCase().replace(/[^0-9a-f]/g, ''));
  const holders = new Map<string, number[]>();
  bases.forEach((base, i) => holders.set(base, [...(holders.get(base) ?? []), i]));
  const used = new Set(bases.filter((base) => holders.get(base)!.length === 1));
  // Each shared slug's holders end with as many characters of their guids as tell them all apart (the same for all of
  // them, so one holder's suffix never becomes another's as holders come and go).
  const lengths = new Map<string, number>();
  for (const [base, group] of holders) {
    if (group.length === 1) continue;
    let n = SUFFIX_LENGTH;
    while (n < 32 && new Set(group.map((i) => tails[i]!.slice(-n))).size < group.length) n++;
    lengths.set(base, n);
  }
  return assignments.map((_, i) => {
    const base = bases[i]!;
    const length = lengths.get(base);
    if (length === undefined) return base;
    // Longer only if a cut base makes it another group's slug (two long names alike in their first characters).
    for (let n = length; ; n++) {
      const suffix = n <= tails[i]!.length ? tails[i]!.slice(-n) : `${tails[i]}${n}`;
      const slug = `${base.slice(0, MAX_SLUG_LENGTH - suffix.length - 2).replace(/-+$/, '')}--${suffix}`;
      if (!used.has(slug)) {
        used.add(slug);
        return slug;
      }
    }
  });
}

const shortHash = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, HASH_LENGTH);

/** Characters MCP's tool-name alphabet lacks (2025-11-25: A-Z a-z 0-9 _ - .), one code point at a time. */
const OUTSIDE_ALPHABET = /[^A-Za-z0-9_.-]/u;
const EACH_OUTSIDE_ALPHABET = new RegExp(OUTSIDE_ALPHABET.source, 'gu');

/**
 * `<slug>__<name>`. A name hosts would not accept in it (a character outside MCP's
 * tool-name alphabet, or too long) has those characters made `_`, is cut to the length
 * limit, and ends with `-` and a hash of the original name, so it stays unique and is
 * resolved back by looking it up (`wasRewritten`).
 */
export function qualify(slug: string, name: string): string {
  const full = `${slug}${SEPARATOR}${name}`;
  if (full.length <= MAX_NAME_LENGTH && !OUTSIDE_ALPHABET.test(name)) return full;
  const room = MAX_NAME_LENGTH - slug.length - SEPARATOR.length - HASH_LENGTH - 1;
  return `${slug}${SEPARATOR}${name.replace(EACH_OUTSIDE_ALPHABET, '_').slice(0, room)}-${shortHash(name)}`;
}

/** Splits a qualified name into slug and name (the name as shown, possibly rewritten), or null. */
export function splitQualified(qualified: string): { slug: string; name: string } | null {
  const at = qualified.indexOf(SEPARATOR);
  if (at <= 0 || at + SEPARATOR.length >= qualified.length) return null;
  return { slug: qualified.slice(0, at), name: qualified.slice(at + SEPARATOR.length) };
}

/** True when a qualified name may have been rewritten by `qualify`, so the original must be found among the server's names. */
export const wasRewritten = (qualified: string): boolean => /-[0-9a-f]{8}$/.test(qualified);
