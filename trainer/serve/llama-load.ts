// trainer/serve/: serving a policy (engine contract, llama.cpp engine, GGUF files, OpenAI-compatible server).
// Files here may import tasks/, prisma/ and trainer/ only (and their npm dependencies).
//
// Loading llama.cpp (node-llama-cpp's prebuilt CPU binary, once a process) and, for safety, each GGUF file once in a
// child process (llama-probe.mjs) before this process loads it: llama.cpp aborts the process on some malformed
// files. The files are validated first (gguf-validate.ts).
import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { getLlama, LlamaLogLevel, type Llama } from 'node-llama-cpp';

let llamaPromise: Promise<Llama> | undefined;

/** The process's llama.cpp binding: the prebuilt CPU binary, never a build or a download. */
export function loadLlama(): Promise<Llama> {
  llamaPromise ??= getLlama({ gpu: false, build: 'never', skipDownload: true, logLevel: LlamaLogLevel.warn }).catch(
    (err: unknown) => {
      llamaPromise = undefined;
      throw new Error(`node-llama-cpp's prebuilt CPU binary could not be loaded: ${(err as Error).message}`);
    },
  );
  return llamaPromise;
}

const PROBE_SCRIPT = fileURLToPath(new URL('./llama-probe.mjs', import.meta.url));
const probed = new Set<string>();

/**
 * Loads a GGUF model (and adapter) once in a child process: resolves when that worked, throws with the child's
 * last output otherwise. Files are content-addressed, so a success is remembered per path and size.
 */
export async function probeGgufInChild(modelPath: string, adapterPath?: string, timeoutMs = 120_000): Promise<void> {
  const key = `${modelPath}:${(await stat(modelPath)).size}|${adapterPath ? `${adapterPath}:${(await stat(adapterPath)).size}` : ''}`;
  if (probed.has(key)) return;
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [PROBE_SCRIPT, modelPath, ...(adapterPath ? [adapterPath] : [])], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // ggml's abort otherwise spends seconds trying to print a backtrace through gdb.
      env: { ...process.env, GGML_NO_BACKTRACE: '1' },
    });
    let out = '';
    const keep = (b: Buffer) => (out = (out + b.toString()).slice(-2000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else {
        const what = adapterPath ? `${adapterPath} (on ${modelPath})` : modelPath;
        reject(
          new Error(
            `llama.cpp could not load ${what}: the probe process ${signal ? `was killed by ${signal}` : `exited with ${code}`}: ${out.trim().split('\n').slice(-4).join(' | ')}`,
          ),
        );
      }
    });
  });
  probed.add(key);
}
