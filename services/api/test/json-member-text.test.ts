import { jsonDepth, minifyJsonText, topLevelMemberText } from '../src/domain/json-member-text';

describe('topLevelMemberText', () => {
  it('returns the exact source text of a member, minified', () => {
    expect(topLevelMemberText('{"a":1,"payload": { "b" : [1, 2.50, 1e3] } }', 'payload')).toBe('{"b":[1,2.50,1e3]}');
    expect(topLevelMemberText('{"payload":12345678901234567890123}', 'payload')).toBe('12345678901234567890123');
    expect(topLevelMemberText('{"payload":"a \\" } { [ string"}', 'payload')).toBe('"a \\" } { [ string"');
    expect(topLevelMemberText('  \n{ "x" : {"payload": 1}, "payload" :\tnull }', 'payload')).toBe('null');
  });

  it('finds keys written with escapes and lets the last duplicate win, like JSON.parse', () => {
    expect(topLevelMemberText('{"pay\\u006coad":[true]}', 'payload')).toBe('[true]');
    expect(topLevelMemberText('{"payload":1,"payload":2}', 'payload')).toBe('2');
  });

  it('ignores nested members and non-object documents', () => {
    expect(topLevelMemberText('{"a":{"payload":1}}', 'payload')).toBeUndefined();
    expect(topLevelMemberText('[{"payload":1}]', 'payload')).toBeUndefined();
    expect(topLevelMemberText('{}', 'payload')).toBeUndefined();
  });

  it('keeps strings byte for byte when minifying', () => {
    expect(minifyJsonText('[ "a  b", {"k\\n" : " "} ]')).toBe('["a  b",{"k\\n":" "}]');
  });

  it('always agrees with JSON.parse on random documents', () => {
    const values = [0, -1.5, 'x', 'q"uote', '\\', null, true, [], {}, [1, [2, [3]]], { a: { b: 'c' } }];
    for (let i = 0; i < 500; i++) {
      const obj: Record<string, unknown> = {};
      for (let j = 0; j < 5; j++) obj[`k${(i * 7 + j) % 9}`] = values[(i + j * 3) % values.length];
      obj.payload = values[i % values.length];
      const text = JSON.stringify(obj, null, i % 3);
      expect(JSON.parse(topLevelMemberText(text, 'payload') as string)).toEqual(obj.payload);
    }
  });
});

describe('jsonDepth', () => {
  it('counts container nesting outside strings', () => {
    expect(jsonDepth('1')).toBe(0);
    expect(jsonDepth('[]')).toBe(1);
    expect(jsonDepth('{"a":[{"b":[]}]}')).toBe(4);
    expect(jsonDepth('["[[[[", {"k": "]]]"}]')).toBe(2);
  });
});
