import { ConfigError } from '@gmg/config';
import { loadSimConfig } from './config';

describe('loadSimConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadSimConfig({})).toEqual({
      port: 9090,
      timeScale: 1,
      publicUrl: 'http://127.0.0.1:9090',
      maxTasks: 50_000,
      logLevel: 'info',
      messagesSlowDeltaMs: 50,
    });
  });

  it('derives the public URL from PORT and strips a trailing slash from SIM_PUBLIC_URL', () => {
    expect(loadSimConfig({ PORT: '9999' }).publicUrl).toBe('http://127.0.0.1:9999');
    expect(loadSimConfig({ SIM_PUBLIC_URL: 'https://sim.example.com/' }).publicUrl).toBe('https://sim.example.com');
  });

  it('reads the time scale and the optional API key', () => {
    const c = loadSimConfig({ SIM_TIME_SCALE: '0.05', SIM_API_KEY: 'k' });
    expect(c.timeScale).toBe(0.05);
    expect(c.apiKey).toBe('k');
  });

  it('lists every bad key at once', () => {
    let err: unknown;
    try {
      loadSimConfig({ PORT: 'x', SIM_TIME_SCALE: '-1', SIM_PUBLIC_URL: 'ftp://nope' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toHaveLength(3);
  });
});
