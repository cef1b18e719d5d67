/**
 * The SDK is standalone (no `@gmg/*` import at run time), so it restates the gateway's error types and task
 * statuses. This file makes the compiler hold them together: the gate's typecheck (tsc -p tsconfig.json, which
 * includes test/**) compiles it, and a type added on one side only fails there. Nothing here runs, so it is no jest
 * test. With `Record<GatewayErrorType, …>` in packages/sdk/src/errors.ts, every error type of the gateway then has
 * its SDK class.
 */
import type { ErrorType, TaskStatus as GatewayTaskStatus } from '@gmg/contracts';
import type { GatewayErrorType, TaskStatus } from '@gmg/sdk';

/** True only when A and B are the same type (not merely assignable one way). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

// each `true` fails to compile when its pair of types differs
const _errorTypes: Equal<GatewayErrorType, ErrorType> = true;
const _statuses: Equal<TaskStatus, GatewayTaskStatus> = true;
