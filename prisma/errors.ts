// Turns what Prisma, its driver adapters and pg throw into one-line messages a person can act on. The raw
// error stays attached as `cause` for logs.
import { Prisma } from './generated/client.ts';

export class DatabaseError extends Error {
  override name = 'DatabaseError';
  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    if (options?.code) this.code = options.code;
  }
  code?: string;
}

/** A unique constraint refused a row: `fields` names the columns when the driver reports them. */
export class UniqueViolationError extends DatabaseError {
  override name = 'UniqueViolationError';
  constructor(
    message: string,
    readonly model: string | undefined,
    readonly fields: string[],
    cause: unknown,
  ) {
    super(message, { cause, code: 'P2002' });
  }
}

interface AdapterCause {
  kind?: string;
  constraint?: { fields?: string[]; index?: string; foreignKey?: unknown };
  originalMessage?: string;
  originalCode?: string;
  table?: string;
}

function adapterCause(meta: Record<string, unknown> | undefined): AdapterCause | undefined {
  const dae = meta?.driverAdapterError as { cause?: AdapterCause } | undefined;
  return dae?.cause;
}

function uniqueFields(meta: Record<string, unknown> | undefined): string[] {
  const target = meta?.target;
  if (Array.isArray(target)) return target.map(String);
  if (typeof target === 'string') return [target];
  const cause = adapterCause(meta);
  const c = cause?.constraint;
  if (c?.fields?.length) return c.fields.map((f) => f.replace(/^"|"$/g, ''));
  if (c?.index) {
    // Prisma names unique indexes <Table>_<field>_<field>_key; our field names are camelCase, so `_` separates.
    const m = /^(.+?)_(.+)_key$/.exec(c.index);
    if (m && (!cause?.table || m[1] === cause.table)) return m[2]!.split('_');
    return [c.index];
  }
  return [];
}

const CONNECTION_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
const CONNECTION_KINDS = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
  'TlsConnectionError',
]);
const NET_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EPIPE',
  'EAI_AGAIN',
]);
// SQLSTATE: class 08 (connection exception), 57P01-57P03 (server shutting down, crash, cannot connect now).
function isConnectionSqlState(code: string | undefined): boolean {
  return !!code && (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03');
}

/** Is this the database being unreachable (worth retrying later), rather than a bad query? */
export function isConnectionError(err: unknown): boolean {
  if (err instanceof Prisma.PrismaClientKnownRequestError) {
    const cause = adapterCause(err.meta);
    return (
      CONNECTION_CODES.has(err.code) ||
      CONNECTION_KINDS.has(cause?.kind ?? '') ||
      isConnectionSqlState(cause?.originalCode)
    );
  }
  if (err instanceof Prisma.PrismaClientInitializationError) return true;
  const e = err as { code?: string; message?: string; cause?: { kind?: string } } | null;
  if (e?.cause?.kind && CONNECTION_KINDS.has(e.cause.kind)) return true;
  if (e?.code && (NET_ERRNOS.has(e.code) || isConnectionSqlState(e.code))) return true;
  return /Connection terminated|connection.*(closed|lost)|timeout exceeded when trying to connect/i.test(
    e?.message ?? '',
  );
}

/** A short message for any error thrown while talking to the database. */
export function describeDatabaseError(err: unknown, ctx: { label?: string; hint?: string } = {}): string {
  const where = ctx.label ? ` (${ctx.label})` : '';
  if (err instanceof DatabaseError) return err.message;
  if (err instanceof Prisma.PrismaClientKnownRequestError) {
    const model = typeof err.meta?.modelName === 'string' ? err.meta.modelName : undefined;
    const cause = adapterCause(err.meta);
    switch (err.code) {
      case 'P2002': {
        const fields = uniqueFields(err.meta);
        return `duplicate value: a ${model ?? 'row'} with the same ${fields.length ? fields.join(', ') : 'unique key'} already exists`;
      }
      case 'P2003':
        return `${model ?? 'row'} refers to a row that does not exist (foreign key${cause?.constraint?.index ? ` ${cause.constraint.index}` : ''})`;
      case 'P2025':
        return `${model ?? 'row'} not found: ${err.message.split('\n').pop()}`;
      case 'P2011':
        return `${model ?? 'row'}: a required value is missing (${err.message.split('\n').pop()})`;
    }
    if (isConnectionError(err))
      return `lost the connection to the database${where}: ${cause?.originalMessage ?? cause?.kind ?? err.code}`;
    return `database error ${err.code}${where}: ${err.message.split('\n').filter(Boolean).pop()}`;
  }
  if (err instanceof Prisma.PrismaClientInitializationError)
    return `cannot start the database client${where}: ${err.message}`;
  const e = err as { code?: string; message?: string } | null;
  if (e?.code && NET_ERRNOS.has(e.code)) {
    return `cannot reach the database${where}: ${e.code}${ctx.hint ? `. ${ctx.hint}` : ''}`;
  }
  if (e?.code === '3D000') return `the database does not exist${where}: ${e.message}${ctx.hint ? `. ${ctx.hint}` : ''}`;
  if (e?.code === '28P01' || e?.code === '28000')
    return `the database refused the login${where}: ${e.message}${ctx.hint ? `. ${ctx.hint}` : ''}`;
  if (isConnectionError(err)) return `lost the connection to the database${where}: ${e?.message ?? String(err)}`;
  return `database error${where}: ${e?.message ?? String(err)}`;
}

/**
 * A database error as a DatabaseError (UniqueViolationError for P2002) with a clear message; anything else
 * comes back untouched (as an Error).
 */
export function toDatabaseError(err: unknown): Error {
  if (err instanceof DatabaseError) return err;
  if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002') {
    const model = typeof err.meta?.modelName === 'string' ? err.meta.modelName : undefined;
    return new UniqueViolationError(describeDatabaseError(err), model, uniqueFields(err.meta), err);
  }
  if (
    err instanceof Prisma.PrismaClientKnownRequestError ||
    err instanceof Prisma.PrismaClientInitializationError ||
    isConnectionError(err)
  ) {
    const code = (err as { code?: string }).code;
    return new DatabaseError(describeDatabaseError(err), code ? { cause: err, code } : { cause: err });
  }
  return err instanceof Error ? err : new Error(String(err));
}
