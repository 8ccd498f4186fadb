// trainer/serve/: serving a policy. Files here may import tasks/, prisma/ and trainer/ only (and their npm dependencies).
//
// Where a foreign GGUF comes from: a local path, or `hf:OWNER/REPO/FILE.gguf`, a file on the Hugging Face hub that
// node-llama-cpp's downloader (createModelDownloader) fetches once into the models directory, as
// <modelsDir>/<owner>/<repo>/<file>; a file already there is used without asking the network. Before downloading,
// the hub's file list is asked (a few seconds at most): no network, no such repository or file, a gated model and
// too little disk space each end here with a sentence saying what to do, instead of node-llama-cpp's own retries,
// which without a network kept waiting for minutes. The hub's sha256 of the file (its LFS id), when it gives one,
// is returned so the caller can check the download against it.
import { existsSync } from 'node:fs';
import { mkdir, stat, statfs } from 'node:fs/promises';
import path from 'node:path';

/** A source that cannot be had; the message is meant for the person who asked. */
export class GgufSourceError extends Error {
  override name = 'GgufSourceError';
}

export interface HfFile {
  owner: string;
  repo: string;
  /** Path of the file inside the repository. */
  file: string;
}

/**
 * An owner or repository name as the hub accepts one (huggingface_hub's validate_repo_id): 1 to 96 of A-Z, a-z,
 * 0-9, `_`, `.` and `-`, no `--` or `..`, neither `-` nor `.` first or last, not ending in `.git`. The names become
 * folders under MODELS_DIR, so nothing else may pass.
 */
export function isHubName(name: string): boolean {
  return (
    /^[A-Za-z0-9_.-]{1,96}$/.test(name) && !/--|\.\./.test(name) && !/^[-.]|[-.]$/.test(name) && !name.endsWith('.git')
  );
}

/** `hf:OWNER/REPO/PATH.gguf` parsed; null for anything that is not an hf: URI; GgufSourceError for a malformed one. */
export function parseHfUri(source: string): HfFile | null {
  if (!source.startsWith('hf:')) return null;
  const [owner = '', repo = '', ...path] = source.slice(3).split('/');
  const file = path.join('/');
  const ok =
    isHubName(owner) &&
    isHubName(repo) &&
    path.length > 0 &&
    path.every((p) => /^[\w.-]+$/.test(p) && p !== '.' && p !== '..') &&
    file.endsWith('.gguf');
  if (!ok) {
    throw new GgufSourceError(
      `"${source}" is not a Hugging Face file URI: write hf:OWNER/REPO/FILE.gguf, OWNER and REPO as the hub names them (letters, digits, _ . -; no "..") (e.g. hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf)`,
    );
  }
  return { owner, repo, file };
}

export interface ResolveGgufOptions {
  /** Where hf: files are downloaded (MODELS_DIR). */
  modelsDir: string;
  /** The hub's address (default https://huggingface.co). */
  endpoint?: string;
  /** How long the hub may take to list the repository's files (default 15 s). */
  timeoutMs?: number;
  onProgress?: (p: { downloadedBytes: number; totalBytes: number }) => void;
  /** HF_TOKEN-style access token for gated models (read from the environment by the caller, never stored). */
  token?: string;
}

export interface ResolvedGguf {
  file: string;
  /** False when the file was there already (a local path, or an hf: file downloaded before). */
  downloaded: boolean;
  /** The hub's sha256 of the file, when it gave one (hf: downloads only). */
  hubSha256: string | null;
}

interface TreeEntry {
  type?: string;
  path?: string;
  size?: number;
  lfs?: { oid?: string; size?: number };
}

function networkReason(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'no answer in time';
  return e.cause?.code ?? e.cause?.message ?? e.message;
}

/** Lists the repository's files in the file's folder; every failure is a GgufSourceError saying what to do. */
async function hubEntry(hf: HfFile, uri: string, o: ResolveGgufOptions): Promise<TreeEntry> {
  const endpoint = (o.endpoint ?? 'https://huggingface.co').replace(/\/+$/, '');
  const dir = path.posix.dirname(hf.file);
  const url = `${endpoint}/api/models/${hf.owner}/${hf.repo}/tree/main${dir === '.' ? '' : `/${dir}`}`;
  let res: Response;
  try {
    res = await fetch(url, {
      signal: AbortSignal.timeout(o.timeoutMs ?? 15_000),
      ...(o.token ? { headers: { authorization: `Bearer ${o.token}` } } : {}),
    });
  } catch (err) {
    throw new GgufSourceError(
      `cannot reach ${new URL(endpoint).host} to download ${uri} (${networkReason(err)}): is this machine online? Otherwise download the file where there is a network and give its path (--gguf ./model.gguf)`,
    );
  }
  if (res.status === 401 || res.status === 403)
    throw new GgufSourceError(
      `${uri}: the hub refused access (HTTP ${res.status}): a gated or private model needs HF_TOKEN set to a token that may read it`,
    );
  if (res.status === 404)
    throw new GgufSourceError(
      `${uri}: the hub has no repository ${hf.owner}/${hf.repo} (or no folder ${dir}): check the spelling`,
    );
  if (!res.ok) throw new GgufSourceError(`${uri}: the hub answered HTTP ${res.status}; try again later`);
  const entries = (await res.json().catch(() => [])) as TreeEntry[];
  const entry = Array.isArray(entries) ? entries.find((e) => e.path === hf.file) : undefined;
  if (!entry) {
    const ggufs = (Array.isArray(entries) ? entries : []).map((e) => e.path ?? '').filter((p) => p.endsWith('.gguf'));
    throw new GgufSourceError(
      `${hf.owner}/${hf.repo} has no file ${hf.file}; its GGUF files: ${ggufs.join(', ') || 'none'}`,
    );
  }
  return entry;
}

/**
 * The local file of a --gguf source: a path as it is (it must exist), or an hf: URI downloaded once into
 * `modelsDir` (with progress). Throws GgufSourceError with what to do.
 */
export async function resolveGgufSource(source: string, o: ResolveGgufOptions): Promise<ResolvedGguf> {
  const hf = parseHfUri(source);
  if (!hf) {
    const file = path.resolve(source);
    const st = await stat(file).catch(() => null);
    if (!st?.isFile())
      throw new GgufSourceError(`${source}: no such file (give a .gguf file's path, or hf:OWNER/REPO/FILE.gguf)`);
    return { file, downloaded: false, hubSha256: null };
  }
  const dirPath = path.resolve(o.modelsDir, hf.owner, hf.repo, path.posix.dirname(hf.file));
  const file = path.join(dirPath, path.posix.basename(hf.file));
  if (existsSync(file)) return { file, downloaded: false, hubSha256: null };
  const entry = await hubEntry(hf, source, o);
  const size = entry.lfs?.size ?? entry.size ?? 0;
  await mkdir(dirPath, { recursive: true });
  const fs = await statfs(dirPath);
  const free = fs.bavail * fs.bsize;
  if (size > 0 && size > free)
    throw new GgufSourceError(
      `${source} is ${(size / 1e9).toFixed(2)} GB but ${dirPath} has ${(free / 1e9).toFixed(2)} GB free: free some space or set MODELS_DIR elsewhere`,
    );
  const { createModelDownloader } = await import('node-llama-cpp');
  try {
    const downloader = await createModelDownloader({
      modelUri: `hf:${hf.owner}/${hf.repo}/${hf.file}`,
      dirPath,
      fileName: path.posix.basename(hf.file),
      showCliProgress: false,
      skipExisting: true,
      deleteTempFileOnCancel: true,
      ...(o.endpoint ? { endpoints: { huggingFace: `${o.endpoint.replace(/\/+$/, '')}/` } } : {}),
      ...(o.token ? { tokens: { huggingFace: o.token } } : {}),
      ...(o.onProgress
        ? {
            onProgress: (s: { downloadedSize: number; totalSize: number }) =>
              o.onProgress!({ downloadedBytes: s.downloadedSize, totalBytes: s.totalSize }),
          }
        : {}),
    });
    const got = await downloader.download();
    if (path.resolve(got) !== file) throw new GgufSourceError(`${source}: the downloader wrote ${got}, not ${file}`);
  } catch (err) {
    if (err instanceof GgufSourceError) throw err;
    throw new GgufSourceError(
      `${source}: the download failed (${(err as Error).message}); nothing was kept, run the command again to retry`,
    );
  }
  return {
    file,
    downloaded: true,
    hubSha256: entry.lfs?.oid && /^[0-9a-f]{64}$/.test(entry.lfs.oid) ? entry.lfs.oid : null,
  };
}
