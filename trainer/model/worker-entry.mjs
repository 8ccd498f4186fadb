// Entry point of the inference worker thread. Worker threads do not inherit the parent's module hooks, so the
// TypeScript sources need tsx registered here before worker.ts is imported.
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');
