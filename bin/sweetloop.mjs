#!/usr/bin/env node
// The `sweetloop` command. Sources are TypeScript run through tsx, so the command works straight after
// `npm ci` with no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./cli.ts');
await main(process.argv);
