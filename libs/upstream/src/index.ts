export * from './adapter';
export * from './gateway.adapter';
export * from './upstream-failure';
export * from './channel-selector';
export * from './circuit-breaker';
export * from './safe-http';
export * from './retry-policy';
export * from './artgen-native';
