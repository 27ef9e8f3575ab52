// Extracts a member's value from JSON *source text*, so a customer's `payload` can be stored and
// echoed exactly as sent: key order, number lexemes (1.0, 1e400, 12345678901234567890) and all.
// JSON.parse + JSON.stringify would round big numbers and reorder integer-like keys.

const WS = new Set([' ', '\t', '\n', '\r']);

function skipWs(s: string, i: number): number {
  while (i < s.length && WS.has(s[i] as string)) i++;
  return i;
}

/** Index just past the string token starting at `i` (which is a double quote). */
function skipString(s: string, i: number): number {
  i++;
  while (i < s.length) {
    const c = s[i];
    if (c === '\\') i += 2;
    else if (c === '"') return i + 1;
    else i++;
  }
  throw new SyntaxError('Unterminated string');
}

/** Index just past the JSON value starting at `i`. */
function skipValue(s: string, i: number): number {
  const c = s[i];
  if (c === '"') return skipString(s, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    while (i < s.length) {
      const d = s[i];
      if (d === '"') {
        i = skipString(s, i);
        continue;
      }
      if (d === '{' || d === '[') depth++;
      else if (d === '}' || d === ']') {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    throw new SyntaxError('Unterminated container');
  }
  while (i < s.length && !WS.has(s[i] as string) && s[i] !== ',' && s[i] !== '}' && s[i] !== ']') i++;
  return i;
}

/** Deepest nesting of arrays and objects in valid JSON text (0 for a scalar). */
export function jsonDepth(s: string): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '"') i = skipString(s, i) - 1;
    else if (c === '{' || c === '[') max = Math.max(max, ++depth);
    else if (c === '}' || c === ']') depth--;
  }
  return max;
}

/** JSON text without insignificant whitespace; strings are copied byte for byte. */
export function minifyJsonText(s: string): string {
  let out = '';
  let i = 0;
  while (i < s.length) {
    const c = s[i] as string;
    if (c === '"') {
      const end = skipString(s, i);
      out += s.slice(i, end);
      i = end;
    } else {
      if (!WS.has(c)) out += c;
      i++;
    }
  }
  return out;
}

/**
 * The minified source text of top-level member `name` of `json`, or undefined when absent.
 * `json` must already be known to be valid JSON (it was parsed); when a name repeats, the last one
 * wins, as with JSON.parse. Returns undefined when the top level is not an object.
 */
export function topLevelMemberText(json: string, name: string): string | undefined {
  let i = skipWs(json, json.charCodeAt(0) === 0xfeff ? 1 : 0);
  if (json[i] !== '{') return undefined;
  i = skipWs(json, i + 1);
  let found: string | undefined;
  while (i < json.length && json[i] !== '}') {
    const keyEnd = skipString(json, i);
    const key = JSON.parse(json.slice(i, keyEnd)) as string;
    i = skipWs(json, keyEnd);
    i = skipWs(json, i + 1); // ':'
    const valueEnd = skipValue(json, i);
    if (key === name) found = minifyJsonText(json.slice(i, valueEnd));
    i = skipWs(json, valueEnd);
    if (json[i] === ',') i = skipWs(json, i + 1);
  }
  return found;
}

/**
 * The source text of each element of the array that is top-level member `name` of `json` (as
 * written, not minified), or undefined when the member is absent or not an array. `json` must
 * already be known to be valid JSON (it was parsed).
 */
export function topLevelArrayElementTexts(json: string, name: string): string[] | undefined {
  const array = topLevelMemberText(json, name);
  if (array === undefined || array[0] !== '[') return undefined;
  const out: string[] = [];
  let i = skipWs(array, 1);
  while (i < array.length && array[i] !== ']') {
    const end = skipValue(array, i);
    out.push(array.slice(i, end));
    i = skipWs(array, end);
    if (array[i] === ',') i = skipWs(array, i + 1);
  }
  return out;
}
