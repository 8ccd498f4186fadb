// The WebAssembly schema engine: loaded once, and its failures turned into errors a person can read.
import { describe, expect, it } from 'vitest';
import { DatabaseError } from '../../prisma/errors.ts';
import { withScratchDatabase } from '../../prisma/migrate-create.ts';
import { loadEngine, openSchemaEngine, runEngine } from '../../prisma/schema-engine.ts';

describe('the schema engine', () => {
  it("loads once, from the Prisma CLI's build when it has the package's interface, and reports its version", async () => {
    const first = await loadEngine();
    expect(await loadEngine()).toBe(first);
    expect(['prisma CLI bundle', '@prisma/schema-engine-wasm']).toContain(first.source);
    expect(first.version).toMatch(/\S/);
  });

  it('keeps the first line of an engine error, without the Rust trace', async () => {
    const failure = Object.assign(
      new Error('the connector failed\n   0: schema_core::state::Trace\n      at src/state.rs:1'),
      { name: 'SchemaConnectorError' },
    );
    const err = await runEngine(undefined, () => Promise.reject(failure)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseError);
    expect((err as Error).message).toBe('schema engine: the connector failed');
    expect((err as Error).cause).toBe(failure);
  });

  it('opens a session on a database with the schema it is given, names the database in errors, and closes twice without harm', async () => {
    await withScratchDatabase(async (db) => {
      const failure = Object.assign(new Error('the connector failed'), { name: 'SchemaConnectorError' });
      await expect(runEngine(db, () => Promise.reject(failure))).rejects.toThrow(
        `schema engine: the connector failed (${db.label})`,
      );
      const session = await openSchemaEngine(db);
      expect(session.schema.files[0]!.path).toMatch(/prisma\/schema\.prisma$/);
      expect(session.schema.files[0]!.content).toMatch(/model Participant \{/);
      await session.close();
      await session.close();
    });
  });
});
