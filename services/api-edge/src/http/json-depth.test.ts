import { jsonDepth } from './json-depth';

describe('jsonDepth', () => {
  it('counts objects and arrays, not brackets inside strings (escaped quotes included)', () => {
    expect(jsonDepth(Buffer.from('{"a":[1,{"b":[]}]}'))).toBe(4);
    expect(jsonDepth(Buffer.from('{"a":"[[[{{{\\"[[[","b":"\\\\"}'))).toBe(1);
    expect(jsonDepth(Buffer.from('"no containers"'))).toBe(0);
  });

  it('stops as soon as the depth passes the bound', () => {
    expect(jsonDepth(Buffer.from('['.repeat(1000)), 10)).toBe(11);
  });
});
