import { KeyedSha256 } from './sdk-hash.ts';
import { SdkHttpHandler } from './sdk-http-handler.ts';

/**
 * What every DynamoDB client the services create is given besides its endpoint (`entry-points/shared-core-from-environment.ts`, the local process),
 * fresh for each client (a client's `destroy` closes its handler's sockets): the signing hash (`sdk-hash.ts`) and the
 * HTTP handler (`sdk-http-handler.ts`). The store besides drops two of the client's middleware and shares one signer among its calls (`dynamodb-store.ts`).
 * Not the SDK's `cacheMiddleware`, which resolves the middleware stack once per command class and shares one handler
 * context among all concurrent calls of that command: it saves 10–20 µs of an HTTP kv read's ~500 µs (resolving the
 * stack is 3.5 µs per call in a microbench), the lease storm's read p99 looked worse with it
 * (`test/bench/lease-storm.bench.ts`, a figure that moves as much from run to run), and lib-dynamodb's document client
 * refuses such a client (issue 28, `docs/performance.md`).
 */
export const storeClientOptions = () => ({ sha256: KeyedSha256, requestHandler: new SdkHttpHandler() });
