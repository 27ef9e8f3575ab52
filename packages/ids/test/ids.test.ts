import { idFromBodies, ID_PREFIXES, isId, newId } from '../src';

describe('newId', () => {
  it('never gives a body starting with `test`, the start kept for sample ids', () => {
    const bodies = ['test0000000000000000000', 'testAbCdEfGhIjKlMnOpQr', 'tesT123456789012345678'];
    let calls = 0;
    const id = idFromBodies('task', () => bodies[calls++]!);
    expect([id, calls]).toEqual(['task_tesT123456789012345678', 3]);
    expect(isId('task', id)).toBe(true);
  });

  it('makes ids of each kind that isId recognises, and only for that kind', () => {
    for (const kind of Object.keys(ID_PREFIXES) as Array<keyof typeof ID_PREFIXES>) {
      const id = newId(kind);
      expect(id.startsWith(`${ID_PREFIXES[kind]}_`)).toBe(true);
      expect(id.slice(ID_PREFIXES[kind].length + 1).startsWith('test')).toBe(false);
      expect(isId(kind, id)).toBe(true);
      expect(isId(kind === 'task' ? 'account' : 'task', id)).toBe(false);
    }
  });
});
