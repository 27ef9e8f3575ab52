import { redactedQuery } from '../src/server-spans';

describe('redactedQuery (url.query of a server span)', () => {
  it("replaces a read token's and a storage signature's values, keeping every other pair and the order", () => {
    expect(redactedQuery('access_token=rt_secret&view=full')).toBe('access_token=REDACTED&view=full');
    expect(redactedQuery('a=1&X-Amz-Signature=abc&b=&c')).toBe('a=1&X-Amz-Signature=REDACTED&b=&c');
  });

  it('reads the name as a query parser does: an encoded name is redacted too', () => {
    expect(redactedQuery('access%5Ftoken=rt_secret&view=full')).toBe('access%5Ftoken=REDACTED&view=full');
    expect(redactedQuery('%61ccess_token=rt_secret&bad=%E0%A4%A')).toBe('%61ccess_token=REDACTED&bad=%E0%A4%A');
  });

  it('leaves a parameter alone whose name only resembles one (case, no value)', () => {
    expect(redactedQuery('ACCESS_TOKEN=x&access_token')).toBe('ACCESS_TOKEN=x&access_token');
  });
});
