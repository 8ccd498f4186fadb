// The Prisma schema engine without Prisma's native binary: the same engine compiled to WebAssembly, loaded here
// and driven through driver adapters (engine-adapters.ts). migrate.ts and migrate-create.ts run its commands.
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import type * as Engine from '@prisma/schema-engine-wasm';
import type { Logger } from '../tasks/logger.ts';
import type { Database } from './db.ts';
import { engineAdapterFor } from './engine-adapters.ts';
import { DatabaseError, describeDatabaseError } from './errors.ts';

export const SCHEMA_PATH = join(dirname(fileURLToPath(import.meta.url)), 'schema.prisma');
/** No external tables or enums: the engine manages everything the schema describes. */
export const NO_FILTER: Engine.SchemaFilter = { externalTables: [], externalEnums: [] };

// ---------------------------------------------------------------------------------------------------------
// Loading the engine

type EngineModule = typeof import('@prisma/schema-engine-wasm/schema_engine_bg');
let engineModule: Promise<{ mod: EngineModule; version: string; source: string }> | null = null;
const engineTimers = new Set<NodeJS.Timeout>();
let liveEngines = 0;

// The project's lib settings (ES2023 + node) do not declare WebAssembly; the little used here is typed locally.
interface WasmModule {
  readonly __wasmModule: unique symbol;
}
interface WasmApi {
  compile(bytes: Uint8Array): Promise<WasmModule>;
  instantiate(
    m: WasmModule,
    imports: Record<string, Record<string, unknown>>,
  ): Promise<{ exports: Record<string, unknown> }>;
  Module: {
    imports(m: WasmModule): { module: string; name: string; kind: string }[];
    exports(m: WasmModule): { name: string; kind: string }[];
  };
}
const Wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/**
 * The npm package's loader imports the .wasm file as an ES module, which Node 20 cannot do; we instantiate it
 * ourselves. The Prisma CLI ships the engine build of its own release (prisma/build/schema_engine_bg.wasm),
 * while the newest @prisma/schema-engine-wasm on the registry is a later commit: when the CLI's build has the
 * same wasm-bindgen interface, use it, so that generated SQL is exactly what `prisma migrate dev` of the
 * installed CLI would write.
 */
export function loadEngine(): Promise<{ mod: EngineModule; version: string; source: string }> {
  engineModule ??= (async () => {
    const require = createRequire(import.meta.url);
    const mod = (await import('@prisma/schema-engine-wasm/schema_engine_bg')) as EngineModule;
    const pkgWasm = join(
      dirname(require.resolve('@prisma/schema-engine-wasm/schema_engine_bg')),
      'schema_engine_bg.wasm',
    );
    let cliWasm: string | null = null;
    try {
      cliWasm = join(dirname(require.resolve('prisma/package.json')), 'build', 'schema_engine_bg.wasm');
    } catch {
      cliWasm = null;
    }
    const pkgModule = await Wasm.compile(readFileSync(pkgWasm));
    let chosen = pkgModule;
    let source = '@prisma/schema-engine-wasm';
    if (cliWasm) {
      try {
        const cliModule = await Wasm.compile(readFileSync(cliWasm));
        if (sameInterface(cliModule, pkgModule)) {
          chosen = cliModule;
          source = 'prisma CLI bundle';
        }
      } catch {
        // Missing or unreadable: the package's build serves.
      }
    }
    // The engine reports Rust panics through this global; without it a panic would surface as a TypeError.
    const g = globalThis as { PRISMA_WASM_PANIC_REGISTRY?: { message: string; set_message(m: string): void } };
    g.PRISMA_WASM_PANIC_REGISTRY ??= {
      message: '',
      set_message(m: string) {
        this.message = `RuntimeError: ${m}`;
      },
    };
    const imports: Record<string, unknown> = { ...mod };
    // The engine's timers must not outlive it (they would keep the process alive after a CLI command).
    for (const name of Object.keys(mod)) {
      if (name.startsWith('__wbg_setTimeout_')) {
        const original = (mod as unknown as Record<string, (f: () => void, ms: number) => NodeJS.Timeout>)[name]!;
        imports[name] = (fn: () => void, ms: number) => {
          const t: NodeJS.Timeout = original(() => {
            engineTimers.delete(t);
            fn();
          }, ms);
          engineTimers.add(t);
          return t;
        };
      }
    }
    const instance = await Wasm.instantiate(chosen, { './schema_engine_bg.js': imports });
    const exports = instance.exports as unknown as { __wbindgen_start?: () => void };
    mod.__wbg_set_wasm(instance.exports);
    exports.__wbindgen_start?.();
    return { mod, version: mod.version(), source };
  })();
  return engineModule;
}

function sameInterface(a: WasmModule, b: WasmModule): boolean {
  const sig = (m: WasmModule) =>
    JSON.stringify([
      Wasm.Module.imports(m)
        .map((i) => `${i.module}:${i.name}:${i.kind}`)
        .sort(),
      Wasm.Module.exports(m)
        .map((e) => `${e.name}:${e.kind}`)
        .sort(),
    ]);
  return sig(a) === sig(b);
}

// ---------------------------------------------------------------------------------------------------------
// A session with the engine

export interface SchemaEngineSession {
  engine: Engine.SchemaEngine;
  schema: Engine.SchemasContainer;
  close(): Promise<void>;
}

/** Starts the engine against a database; the schema (default prisma/schema.prisma) sets datasource and namespaces. */
export async function openSchemaEngine(
  db: Database,
  opts: { schemaPath?: string; log?: Logger } = {},
): Promise<SchemaEngineSession> {
  const { mod } = await loadEngine();
  const schemaPath = resolve(opts.schemaPath ?? SCHEMA_PATH);
  const content = await readFile(schemaPath, 'utf8');
  const adapter = engineAdapterFor(db, opts.log);
  const log = opts.log;
  // The engine is chatty: its lines go out at debug level only.
  const onLog = (line: string) => log?.debug({ engine: line }, 'schema engine');
  let engine: Engine.SchemaEngine;
  try {
    engine = await mod.SchemaEngine.new(
      { datamodels: [[schemaPath, content]] },
      onLog,
      bindMigrationAwareSqlAdapterFactory(adapter.factory),
    );
  } catch (err) {
    await adapter.close();
    throw engineError(err, db);
  }
  liveEngines++;
  let closed = false;
  return {
    engine,
    schema: { files: [{ path: schemaPath, content }] },
    close: async () => {
      if (closed) return;
      closed = true;
      engine.free();
      await adapter.close();
      if (--liveEngines === 0) {
        for (const t of engineTimers) clearTimeout(t);
        engineTimers.clear();
      }
    },
  };
}

function engineError(err: unknown, db?: Database): Error {
  const e = err as Error & { code?: string };
  if (e instanceof DatabaseError) return e;
  if (e?.name === 'SchemaConnectorError' || e?.code) {
    // Engine messages carry a Rust span trace after the first line; keep what a person can read.
    const first = String(e.message).split('\n   0: ')[0]!.trim();
    return new DatabaseError(`schema engine: ${first}${db ? ` (${db.label})` : ''}`, { cause: err });
  }
  return new DatabaseError(describeDatabaseError(err, db ? { label: db.label } : {}), { cause: err });
}

/** Runs an engine command; what it throws becomes a DatabaseError a person can read. */
export async function runEngine<T>(db: Database | undefined, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw engineError(err, db);
  }
}
