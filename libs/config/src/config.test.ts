import { Joi, loadConfig, ConfigError, env, commonSchema, commonConfigOf, configLoader, type CommonEnv } from './index';

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

describe('configLoader', () => {
  it('maps the checked environment into the service config, frozen, and refuses a bad one', () => {
    const load = configLoader(Joi.object<{ PORT: number }>({ PORT: env.port(8080) }), (e) => ({ port: e.PORT }));
    expect(load({})).toEqual({ port: 8080 });
    expect(Object.isFrozen(load({ PORT: '1' }))).toBe(true);
    expect(() => load({ PORT: 'x' })).toThrow(ConfigError);
  });
});

describe('commonConfigOf: the Postgres part', () => {
  const schema = Joi.object<CommonEnv>(commonSchema);
  const postgresOptions = (e: CommonEnv, poolMax: number, name: string) => commonConfigOf(e, poolMax, name).postgres;
  it('takes the service default pool unless PG_POOL_MAX is set, with documented timeouts, and refuses bad values', () => {
    const e = loadConfig<CommonEnv>(schema, {});
    expect(postgresOptions(e, 20, 'api-edge')).toEqual({
      url: 'postgres://postgres@127.0.0.1:5432/gmg',
      poolSize: 20,
      applicationName: 'api-edge',
      connectTimeoutMs: 5000,
      statementTimeoutMs: 30_000,
      lockTimeoutMs: 10_000,
      idleInTxTimeoutMs: 60_000,
    });
    const set = loadConfig<CommonEnv>(schema, { PG_POOL_MAX: '7', PG_STATEMENT_TIMEOUT_MS: '0' });
    expect(postgresOptions(set, 20, 'x')).toMatchObject({ poolSize: 7, statementTimeoutMs: 0 });
    expect(() => loadConfig(schema, { PG_POOL_MAX: '0', PG_CONNECT_TIMEOUT_MS: 'soon' })).toThrow(/PG_POOL_MAX[\s\S]*PG_CONNECT_TIMEOUT_MS/);
  });
});
