// Pay data never leaves in an export: people who gave a Prolific ID (PayAccount, prisma/pay-account-store.ts) in a
// study that asks for it, and every export format (EXPORT_FORMATS) written over their sessions, the whole selection
// and the study's alone. Every file written is read back: as text, and Parquet files also decoded (their pages
// may be compressed), the dataset cards included.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parquetReadObjects } from 'hyparquet';
import { createTestDatabase } from '../../../testing/database.ts';
import { EXPORT_FORMATS, exportSessions, type ExportFormat } from '../../../bot/export/export.ts';
import type { ExportFilters } from '../../../bot/export/query.ts';
import type { PrismaClient } from '../../../prisma/generated/client.ts';
import { savePayAccount } from '../../../prisma/pay-account-store.ts';
import { IDS, seedExportWorld, type Seeded } from './fixtures.ts';

const SALT = 'test-salt-123';
// One Prolific ID per person whose sessions are exported (24 hexadecimal characters, as Prolific's are).
const PROLIFIC = {
  alice: 'a11ce0000000000000000001',
  bob: 'b0b0000000000000000000b2',
  mod: 'c0ffee000000000000000003',
};

let t: Awaited<ReturnType<typeof createTestDatabase>>;
let prisma: PrismaClient;
let seeded: Seeded;
let dir: string;

beforeAll(async () => {
  t = await createTestDatabase();
  prisma = t.prisma;
  seeded = await seedExportWorld(prisma);
  dir = await mkdtemp(join(tmpdir(), 'sweetloop-pay-data-'));
  const study = await prisma.study.create({
    data: {
      name: 'prolific-pilot',
      seed: 1,
      perTask: 1,
      createdBy: 'cli',
      participantIdPlatform: 'prolific',
      completionCode: 'C1PRO2LIFIC',
    },
  });
  for (const [person, id] of Object.entries(PROLIFIC)) {
    const p = await prisma.participant.findUniqueOrThrow({ where: { discordUserId: IDS[person as keyof typeof IDS] } });
    await savePayAccount(prisma, p.id, 'prolific', id.toUpperCase());
  }
  await prisma.session.updateMany({
    where: { id: { in: Object.values(seeded.sessions) } },
    data: { studyId: study.id },
  });
});

afterAll(async () => {
  await t?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Every file under `path` (a file and its card, or a dataset folder), as the text a reader of it sees. */
async function contents(path: string): Promise<{ file: string; text: string }[]> {
  const files = statSync(path).isDirectory()
    ? readdirSync(path, { recursive: true, encoding: 'utf8' })
        .map((f) => join(path, f))
        .filter((f) => statSync(f).isFile())
    : [path, `${path}.README.md`];
  const out: { file: string; text: string }[] = [];
  for (const file of files) {
    const bytes = readFileSync(file);
    out.push({ file, text: bytes.toString('latin1') });
    if (bytes.subarray(0, 4).toString('latin1') === 'PAR1') {
      const rows = await parquetReadObjects({
        file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
      });
      out.push({
        file: `${file} (decoded)`,
        text: JSON.stringify(rows, (_k, v) => (typeof v === 'bigint' ? Number(v) : v)),
      });
    }
  }
  return out;
}

describe('pay data in exports', () => {
  it('no export format, of the whole selection or of the study, contains a Prolific ID', async () => {
    expect(await prisma.payAccount.count()).toBe(3);
    const everything: ExportFilters = {
      source: 'both',
      includeFlagged: true,
      statuses: ['answered', 'abandoned', 'expired', 'active'],
    };
    const formats = EXPORT_FORMATS as readonly ExportFormat[];
    expect(formats).toEqual(
      expect.arrayContaining(['jsonl', 'parquet', 'hf', 'sweet-rl', 'trl-sft', 'trl-dpo', 'verl-rl', 'verl-sft']),
    );
    let checked = 0;
    for (const format of formats) {
      for (const study of [undefined, 'prolific-pilot']) {
        const path = join(dir, `${format}-${study ?? 'all'}${format === 'hf' ? '' : '.out'}`);
        const r = await exportSessions(
          prisma,
          {
            format,
            salt: SALT,
            allowEmpty: true,
            ...(study ? { study } : {}),
            // One task kind per sweet-rl file; its frontend answers would need Chromium.
            filters: { ...everything, ...(format === 'sweet-rl' ? { kind: 'backend' as const } : {}) },
          },
          path,
        );
        const files = await contents(path);
        // Something was written: the sessions of the people who gave an id are in it.
        expect(r.sessions, `${format} ${study ?? ''}`).toBeGreaterThan(0);
        for (const { file, text } of files) {
          for (const id of Object.values(PROLIFIC)) {
            expect(text.toLowerCase(), `${file} holds a Prolific ID`).not.toContain(id);
          }
          expect(text, file).not.toMatch(/prolific_?id|payAccount|pay_account|accountId|account_id/i);
        }
        checked++;
      }
    }
    expect(checked).toBe(formats.length * 2);
  });
});
