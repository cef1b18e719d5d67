import http from 'node:http';
import type { Socket } from 'node:net';

/** What the server needs of an Express app: its request listener and the prototypes it gives requests and responses. */
export interface PrototypedApp extends http.RequestListener {
  request: object;
  response: object;
}

/**
 * An HTTP server whose requests and responses are born with the app's own prototypes (`app.request`,
 * `app.response`): Express sets them on every request (`Object.setPrototypeOf` in app.handle, and in the direct
 * routes), which V8 makes costly when it changes an object's prototype — here it finds them in place. Behaviour is
 * the same as `app.listen`'s plain server; only the objects' prototype chain is there from the start.
 */
export function appServer(app: PrototypedApp, timeouts: { requestTimeoutMs?: number; headersTimeoutMs?: number } = {}): http.Server {
  function AppRequest(this: http.IncomingMessage, socket: Socket): void {
    http.IncomingMessage.call(this, socket);
  }
  AppRequest.prototype = app.request;
  function AppResponse(this: http.ServerResponse, req: http.IncomingMessage, options?: unknown): void {
    (http.ServerResponse as unknown as (this: http.ServerResponse, req: http.IncomingMessage, options?: unknown) => void).call(this, req, options);
  }
  AppResponse.prototype = app.response;
  return http.createServer(
    {
      IncomingMessage: AppRequest as unknown as typeof http.IncomingMessage,
      ServerResponse: AppResponse as unknown as typeof http.ServerResponse,
      // REQUEST_TIMEOUT_MS / HEADERS_TIMEOUT_MS (README): a slow sender is cut off (408) instead of holding its
      // connection, and a large body's share of the body budget, for node's default 300 s
      ...(timeouts.requestTimeoutMs !== undefined ? { requestTimeout: timeouts.requestTimeoutMs } : {}),
      ...(timeouts.headersTimeoutMs !== undefined ? { headersTimeout: timeouts.headersTimeoutMs } : {}),
    },
    app,
  );
}
