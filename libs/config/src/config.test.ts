import { Joi, loadConfig, ConfigError, env } from './index';

describe('loadConfig', () => {
  const schema = Joi.object({ PORT: env.port(8080), SECRET: Joi.string().required(), FLAG: env.bool(false) });
  it('applies defaults, converts types and freezes', () => {
    const c = loadConfig<{ PORT: number; SECRET: string; FLAG: boolean }>(schema, { SECRET: 's', FLAG: 'yes' });
    expect(c).toEqual({ PORT: 8080, SECRET: 's', FLAG: true });
    expect(Object.isFrozen(c)).toBe(true);
  });
  it('lists every bad key at once', () => {
    try {
      loadConfig(schema, { PORT: 'x' });
      throw new Error('should have thrown');
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).problems.join('\n')).toMatch(/PORT/);
      expect((e as ConfigError).problems.join('\n')).toMatch(/SECRET/);
    }
  });
});
