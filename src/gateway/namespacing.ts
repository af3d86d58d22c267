import { createHash } from 'node:crypto';

/**
 * Names the gateway shows: `<server-slug>__<name>`. Slugs are unique within a
 * gateway; qualified names stay within MCP's limit for tool names (128 characters
 * of A-Z a-z 0-9 _ - .), an overlong name being cut and suffixed with a hash of
 * the original so it stays unique and can be resolved back.
 */
export const SEPARATOR = '__';
export const MAX_NAME_LENGTH = 128;
const MAX_SLUG_LENGTH = 32;
const HASH_LENGTH = 8;

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
 * Unique slugs for servers in a fixed order (the gateway's assignments, oldest
 * first): a repeated slug gets `-2`, `-3`, ... Same input, same slugs, in every process.
 */
export function uniqueSlugs(names: readonly string[]): string[] {
  const used = new Set<string>();
  return names.map((name) => {
    const base = slugify(name);
    let slug = base;
    for (let n = 2; used.has(slug); n++) slug = `${base.slice(0, MAX_SLUG_LENGTH - String(n).length - 1)}-${n}`;
    used.add(slug);
    return slug;
  });
}

const shortHash = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, HASH_LENGTH);

/** `<slug>__<name>`, cut to the length limit with a hash of the name when too long. */
export function qualify(slug: string, name: string): string {
  const full = `${slug}${SEPARATOR}${name}`;
  if (full.length <= MAX_NAME_LENGTH) return full;
  const room = MAX_NAME_LENGTH - slug.length - SEPARATOR.length - HASH_LENGTH - 1;
  return `${slug}${SEPARATOR}${name.slice(0, room)}-${shortHash(name)}`;
}

/** Splits a qualified name into slug and name (the name as shown, possibly cut), or null. */
export function splitQualified(qualified: string): { slug: string; name: string } | null {
  const at = qualified.indexOf(SEPARATOR);
  if (at <= 0 || at + SEPARATOR.length >= qualified.length) return null;
  return { slug: qualified.slice(0, at), name: qualified.slice(at + SEPARATOR.length) };
}

/** True when a qualified name was cut, so the original must be found among the server's names. */
export const wasCut = (qualified: string): boolean => qualified.length === MAX_NAME_LENGTH && /-[0-9a-f]{8}$/.test(qualified);
