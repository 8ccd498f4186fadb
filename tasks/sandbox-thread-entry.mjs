// Entry point of the sandbox thread (sandbox-thread.ts). Worker threads do not inherit the parent's module hooks,
// so the TypeScript sources need tsx registered here before sandbox-worker.ts is imported.
import { register } from 'tsx/esm/api';

register();
await import('./sandbox-worker.ts');
