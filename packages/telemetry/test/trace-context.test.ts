import { childTraceParent, continuedTraceParent, newSpanId, newTraceId, parseTraceParent, traceIdOf } from '../src/trace-context';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const VALID = `00-${TRACE}-${SPAN}-01`;

describe('W3C traceparent by hand', () => {
  it('parses a valid version-00 traceparent', () => {
    expect(parseTraceParent(VALID)).toEqual({ traceId: TRACE, parentId: SPAN, flags: '01' });
    expect(traceIdOf(VALID)).toBe(TRACE);
  });

  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['malformed', '00-not-a-trace-01'],
    ['another version', `01-${TRACE}-${SPAN}-01`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['one-digit flags', `00-${TRACE}-${SPAN}-1`],
    ['trailing text', `${VALID}-extra`],
  ])('refuses %s', (_what, value) => {
    expect(parseTraceParent(value)).toBeUndefined();
    expect(traceIdOf(value)).toBeUndefined();
    expect(continuedTraceParent(value)).toBeUndefined();
  });

  it('makes random, valid, distinct ids', () => {
    const traces = new Set(Array.from({ length: 100 }, newTraceId));
    const spans = new Set(Array.from({ length: 100 }, newSpanId));
    expect(traces.size).toBe(100);
    expect(spans.size).toBe(100);
    for (const t of traces) expect(t).toMatch(/^(?!0{32})[0-9a-f]{32}$/);
    for (const s of spans) expect(s).toMatch(/^(?!0{16})[0-9a-f]{16}$/);
  });

  it('a child of a valid traceparent keeps its trace and flags, with a new span id', () => {
    const child = childTraceParent(VALID);
    const p = parseTraceParent(child)!;
    expect(p).toEqual({ traceId: TRACE, parentId: expect.not.stringMatching(SPAN), flags: '01' });
    expect(childTraceParent(VALID)).not.toBe(child);
    expect(parseTraceParent(childTraceParent(`00-${TRACE}-${SPAN}-00`))!.flags).toBe('00');
  });

  it('a child of nothing, or of an invalid traceparent, starts a new sampled trace (a task is traced by default)', () => {
    for (const parent of [undefined, null, '00-not-a-trace-01', `00-${'0'.repeat(32)}-${SPAN}-01`]) {
      const p = parseTraceParent(childTraceParent(parent));
      expect(p).toEqual({ traceId: expect.stringMatching(/^[0-9a-f]{32}$/), parentId: expect.stringMatching(/^[0-9a-f]{16}$/), flags: '01' });
      expect(p!.traceId).not.toBe(TRACE);
    }
  });

  it('continues a stored traceparent with a new span id', () => {
    const next = continuedTraceParent(VALID)!;
    expect(next).toMatch(new RegExp(`^00-${TRACE}-(?!${SPAN})[0-9a-f]{16}-01$`));
  });
});
