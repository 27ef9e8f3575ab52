// The series selectors of a PromQL expression, for tests that hold alert rules and dashboards to the
// metrics the services really export. A tokenizer, not a full parser: it knows what PromQL puts
// where a metric name could otherwise be read (function calls, keywords, label lists after
// by/without/on/ignoring/group_left/group_right, label matchers in braces, strings, durations,
// comments) and Grafana's `$variables`.

/** One label matcher of a selector, e.g. `status=~"5.."`. */
export interface LabelMatcher {
  label: string;
  op: '=' | '!=' | '=~' | '!~';
  value: string;
}

/** A series selector: `name{matchers}`; `name` is undefined for `{__name__=~"…"}` forms without an equality on it. */
export interface SeriesSelector {
  name: string | undefined;
  matchers: LabelMatcher[];
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'inf', 'nan', 'atan2']);
/** Keywords followed by a parenthesised list of label names. */
const LABEL_LIST_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

type Token =
  | { type: 'ident'; text: string; variable: boolean }
  | { type: 'string'; text: string }
  | { type: 'punct'; text: string }
  | { type: 'number'; text: string };

function tokenize(expr: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '#') {
      while (i < expr.length && expr[i] !== '\n') i++;
    } else if (c === '"' || c === "'" || c === '`') {
      let text = '';
      i++;
      while (i < expr.length && expr[i] !== c) {
        if (expr[i] === '\\' && c !== '`') {
          text += expr[i + 1] ?? '';
          i += 2;
        } else {
          text += expr[i++];
        }
      }
      if (i >= expr.length) throw new Error(`unterminated string in ${expr}`);
      i++;
      tokens.push({ type: 'string', text });
    } else if (c === '$') {
      // A Grafana variable: $name, ${name} or ${name:format}.
      const m = /^\$(?:\{[^}]*\}|\w+)/.exec(expr.slice(i));
      if (!m) throw new Error(`lone $ in ${expr}`);
      tokens.push({ type: 'ident', text: m[0], variable: true });
      i += m[0].length;
    } else if (/[a-zA-Z_:]/.test(c)) {
      const m = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(expr.slice(i))!;
      tokens.push({ type: 'ident', text: m[0], variable: false });
      i += m[0].length;
    } else if (/[0-9.]/.test(c)) {
      // Numbers and durations (5m, 1h30m, 1e3, 0x1f).
      const m = /^[0-9.]+(?:[eE][+-]?[0-9]+)?[a-zA-Z0-9]*/.exec(expr.slice(i))!;
      tokens.push({ type: 'number', text: m[0] });
      i += m[0].length;
    } else {
      const two = expr.slice(i, i + 2);
      const text = ['=~', '!~', '!=', '==', '>=', '<='].includes(two) ? two : c;
      tokens.push({ type: 'punct', text });
      i += text.length;
    }
  }
  return tokens;
}

/**
 * Every series selector in `expr` (a PromQL expression, possibly with Grafana variables), in order.
 * Throws on what it cannot read (an unterminated string or matcher list), so a test fails loudly
 * rather than checking less than it claims.
 */
export function seriesSelectors(expr: string): SeriesSelector[] {
  const tokens = tokenize(expr);
  const selectors: SeriesSelector[] = [];
  const at = (i: number) => tokens[i];
  const isPunct = (i: number, text: string) => at(i)?.type === 'punct' && at(i)!.text === text;
  // `sum by (kind) (…)`: an aggregation, not a metric, when `by`/`without` follows it.
  const isGrouping = (i: number) => at(i)?.type === 'ident' && ['by', 'without'].includes(at(i)!.text.toLowerCase()) && isPunct(i + 1, '(');

  /** Reads `{…}` starting at `i` (the brace); returns the matchers and the index after it. */
  const readMatchers = (i: number): [LabelMatcher[], number] => {
    const matchers: LabelMatcher[] = [];
    let j = i + 1;
    while (!isPunct(j, '}')) {
      const label = at(j);
      const op = at(j + 1);
      const value = at(j + 2);
      if (label?.type !== 'ident' || op?.type !== 'punct' || !['=', '!=', '=~', '!~'].includes(op.text) || value?.type !== 'string') {
        throw new Error(`cannot read the label matchers of ${expr}`);
      }
      matchers.push({ label: label.text, op: op.text as LabelMatcher['op'], value: value.text });
      j += 3;
      if (isPunct(j, ',')) j++;
    }
    return [matchers, j + 1];
  };

  let i = 0;
  while (i < tokens.length) {
    const token = tokens[i]!;
    if (token.type === 'ident' && !token.variable && LABEL_LIST_KEYWORDS.has(token.text) && isPunct(i + 1, '(')) {
      // by (kind, le): label names, not metrics.
      let j = i + 2;
      while (j < tokens.length && !isPunct(j, ')')) j++;
      i = j + 1;
    } else if (token.type === 'ident' && !token.variable && !KEYWORDS.has(token.text.toLowerCase()) && !isPunct(i + 1, '(') && !isGrouping(i + 1)) {
      if (isPunct(i + 1, '{')) {
        const [matchers, next] = readMatchers(i + 1);
        selectors.push({ name: token.text, matchers });
        i = next;
      } else {
        selectors.push({ name: token.text, matchers: [] });
        i++;
      }
    } else if (token.type === 'punct' && token.text === '[') {
      // A range or subquery: [5m], [$__rate_interval], [30m:1m].
      while (i < tokens.length && !isPunct(i, ']')) i++;
      i++;
    } else if (token.type === 'punct' && token.text === '{') {
      const [matchers, next] = readMatchers(i);
      const name = matchers.find((m) => m.label === '__name__' && m.op === '=')?.value;
      selectors.push({ name, matchers: matchers.filter((m) => m.label !== '__name__' || m.op !== '=') });
      i = next;
    } else {
      i++;
    }
  }
  return selectors;
}
