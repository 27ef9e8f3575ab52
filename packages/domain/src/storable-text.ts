// PostgreSQL text cannot hold a NUL character or half of a UTF-16 surrogate pair (docs/architecture.md, hostile input).
// Input that holds one is refused at the API's edge; text the service itself stores from outside
// (a receiver's answer, an engine's message) is mended with these.
const UNSTORABLE_SOURCE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.source;

/** Matches the first character PostgreSQL text cannot store. */
export const UNSTORABLE_TEXT = new RegExp(UNSTORABLE_SOURCE);

const UNSTORABLE_ALL = new RegExp(UNSTORABLE_SOURCE, 'g');

/**
 * `text` as PostgreSQL can store it: cut to at most `maxChars` without splitting a surrogate pair,
 * then every NUL and unpaired surrogate replaced by U+FFFD.
 */
export function storableText(text: string, maxChars = Infinity): string {
  const cut = text.length > maxChars ? text.slice(0, maxChars).replace(/[\uD800-\uDBFF]$/, '') : text;
  return cut.replace(UNSTORABLE_ALL, '\uFFFD');
}
