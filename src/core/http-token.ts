/** The characters of an RFC 9110 token (a header name, for one). */
const TOKEN_CHARACTERS = "[!#$%&'*+\\-.^_`|~0-9A-Za-z]";

/** A whole text that is an RFC 9110 token. */
export const HTTP_TOKEN = new RegExp(`^${TOKEN_CHARACTERS}+$`);

/** The token a text starts with (empty when it starts with something else). */
export const LEADING_HTTP_TOKEN = new RegExp(`^${TOKEN_CHARACTERS}*`);
