import { isPrivateAddress, mediaUrlProblem } from './media-url';

describe('mediaUrlProblem', () => {
  it.each([
    'https://cdn.example.com/a.png',
    'http://images.example.org:8080/x.jpg?sig=1',
    'https://8.8.8.8/a.png',
    'https://[2606:4700::1111]/a.png',
    'https://sub.localhost-cdn.com/a.png',
  ])('accepts public %s', (url) => {
    expect(mediaUrlProblem(url)).toBeUndefined();
  });

  it.each([
    ['ftp://cdn.example.com/a.png', 'http or https'],
    ['file:///etc/passwd', 'http or https'],
    ['javascript:alert(1)', 'http or https'],
    ['not a url', 'valid absolute URL'],
    ['http://user:pw@cdn.example.com/a', 'credentials'],
    ['http://127.0.0.1/a', 'private'],
    ['http://127.1/a', 'private'],
    ['http://2130706433/a', 'private'],
    ['http://0x7f000001/a', 'private'],
    ['http://0177.0.0.1/a', 'private'],
    ['http://0.0.0.0/a', 'private'],
    ['http://10.1.2.3/a', 'private'],
    ['http://172.16.0.1/a', 'private'],
    ['http://172.31.255.255/a', 'private'],
    ['http://192.168.1.1/a', 'private'],
    ['http://100.64.0.1/a', 'private'],
    ['http://169.254.169.254/latest/meta-data', 'private'],
    ['http://[::1]/a', 'private'],
    ['http://[::]/a', 'private'],
    ['http://[::ffff:127.0.0.1]/a', 'private'],
    ['http://[::ffff:a9fe:a9fe]/a', 'private'],
    ['http://[fd00:ec2::254]/a', 'private'],
    ['http://[fc00::1]/a', 'private'],
    ['http://[fe80::1]/a', 'private'],
    ['http://[64:ff9b::10.0.0.1]/a', 'private'],
    ['http://localhost/a', 'internal host'],
    ['http://LOCALHOST./a', 'internal host'],
    ['http://api.localhost/a', 'internal host'],
    ['http://metadata.google.internal/a', 'internal host'],
    ['http://redis.internal/a', 'internal host'],
    ['http://intranet/a', 'internal host'],
  ])('refuses %s (%s)', (url, why) => {
    expect(mediaUrlProblem(url)).toContain(why);
  });

  it('refuses paths that climb out of a trusted prefix once normalized', () => {
    const opts = { trustedPrefixes: ['http://127.0.0.1:8080/v1/uploads/'] };
    expect(mediaUrlProblem('http://127.0.0.1:8080/v1/uploads/../../api/keys', opts)).toBeDefined();
    expect(mediaUrlProblem('http://127.0.0.1:8080/v1/uploads/%2e%2e/%2e%2e/api/x', opts)).toBeDefined();
    expect(mediaUrlProblem('http://127.0.0.1:8080/v1/uploads/img_abc.png', opts)).toBeUndefined();
  });
  it('accepts URLs under a trusted prefix even on loopback, and only under it', () => {
    const opts = { trustedPrefixes: ['http://127.0.0.1:8080/v1/uploads/'] };
    expect(mediaUrlProblem('http://127.0.0.1:8080/v1/uploads/img_1.png', opts)).toBeUndefined();
    expect(mediaUrlProblem('http://127.0.0.1:8080/admin', opts)).toContain('private');
    expect(mediaUrlProblem('http://127.0.0.1/a', { trustedPrefixes: [''] })).toContain('private');
  });

  it('does not treat public look-alikes of private ranges as private', () => {
    expect(mediaUrlProblem('http://172.32.0.1/a')).toBeUndefined();
    expect(mediaUrlProblem('http://100.128.0.1/a')).toBeUndefined();
    expect(mediaUrlProblem('http://11.0.0.1/a')).toBeUndefined();
  });
});

describe('isPrivateAddress', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    '::',
    'fd00:ec2::254',
    'fe80::1',
    '::ffff:127.0.0.1',
    '64:ff9b::a00:1',
    '2002:a00:1::',
    'not-an-ip',
    '',
  ])('classifies %s as not public', (ip) => expect(isPrivateAddress(ip)).toBe(true));
  it.each(['93.184.215.14', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8'])('classifies %s as public', (ip) => expect(isPrivateAddress(ip)).toBe(false));
});
