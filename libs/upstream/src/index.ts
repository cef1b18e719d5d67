export * from './adapter';
export * from './gateway.adapter';
export * from './upstream-failure';
export * from './channel-selector';
export * from './circuit-breaker';
export * from './messages/messages-upstream.client';
export * from './artgen-native';
export * from './public-host';
