/**
 * The SDK is standalone (no `@gmg/*` import at run time), so it restates the gateway's error types and task
 * statuses. This check makes the compiler hold them together (the gate's typecheck compiles this file): a type added
 * on one side only fails the typecheck. With `Record<GatewayErrorType, …>` in packages/sdk/src/errors.ts, every
 * error type of the gateway then has its SDK class.
 */
import type { ErrorType, TaskStatus as GatewayTaskStatus } from '@gmg/contracts';
import type { GatewayErrorType, TaskStatus } from '@gmg/sdk';

/** True only when A and B are the same type (not merely assignable one way). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

describe("SDK types agree with the gateway's", () => {
  it('error types and task statuses are the same sets', () => {
    const errorTypes: Equal<GatewayErrorType, ErrorType> = true;
    const statuses: Equal<TaskStatus, GatewayTaskStatus> = true;
    expect([errorTypes, statuses]).toEqual([true, true]);
  });
});
