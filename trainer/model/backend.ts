// Chooses the TensorFlow.js backend: native TensorFlow (tfjs-node-gpu, then tfjs-node) when it loads, else
// WebAssembly with our kernel fixes, else the pure-JS cpu backend (30x slower than patched wasm: a debug
// fallback). A forced choice that cannot be honoured throws instead of silently running elsewhere.

import { createRequire } from 'node:module';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { applyWasmFixes } from './wasm-fixes.ts';

export type BackendChoice = 'tensorflow' | 'wasm' | 'cpu';

export interface BackendInfo {
  /** The active tfjs backend name: "tensorflow", "wasm" or "cpu". */
  name: string;
  /** Human-readable account of what was chosen and why the faster options were not. */
  detail: string;
}

const require = createRequire(import.meta.url);

async function tryNative(): Promise<{ ok: true; detail: string } | { ok: false; reason: string }> {
  const reasons: string[] = [];
  for (const pkg of ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node']) {
    try {
      // Through a variable so the type checker does not require the optional packages.
      await import(/* @vite-ignore */ pkg as string);
      if (tf.findBackend('tensorflow') && (await tf.setBackend('tensorflow')))
        return { ok: true, detail: `${pkg} (native TensorFlow)` };
      reasons.push(`${pkg} loaded but registered no "tensorflow" backend`);
    } catch (e) {
      reasons.push(`${pkg}: ${firstLine(e)}`);
    }
  }
  return { ok: false, reason: reasons.join('; ') };
}

let wasmModulePromise: Promise<typeof import('@tensorflow/tfjs-backend-wasm')> | undefined;

/** Loads the wasm backend once, pointing it at the .wasm binaries inside node_modules, and applies the fixes. */
export async function registerWasm(): Promise<void> {
  wasmModulePromise ??= (async () => {
    const wasm = await import('@tensorflow/tfjs-backend-wasm');
    const dist = path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm'));
    wasm.setWasmPaths(dist + path.sep);
    applyWasmFixes();
    return wasm;
  })();
  await wasmModulePromise;
}

async function tryWasm(): Promise<{ ok: true; detail: string } | { ok: false; reason: string }> {
  try {
    await registerWasm();
    if (!(await tf.setBackend('wasm'))) return { ok: false, reason: 'wasm backend failed to initialise' };
    return { ok: true, detail: 'WebAssembly (XNNPACK, SIMD, single-threaded) with kernel fixes' };
  } catch (e) {
    return { ok: false, reason: `wasm: ${firstLine(e)}` };
  }
}

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0]!.slice(0, 200);
}

/**
 * Initialises the best available backend, or exactly `forced` (throwing when it is unavailable).
 * Safe to call more than once; a later call may switch backends (tensors of the old one stay readable by
 * tfjs's data movement, but it is best to create models after choosing).
 */
export async function initBackend(forced?: BackendChoice): Promise<BackendInfo> {
  const skipped: string[] = [];
  if (!forced || forced === 'tensorflow') {
    const r = await tryNative();
    if (r.ok) return { name: tf.getBackend(), detail: r.detail };
    if (forced) throw new Error(`TFJS_BACKEND=tensorflow, but native TensorFlow is unavailable: ${r.reason}`);
    skipped.push(r.reason);
  }
  if (!forced || forced === 'wasm') {
    const r = await tryWasm();
    if (r.ok)
      return {
        name: tf.getBackend(),
        detail: r.detail + (skipped.length ? ` (native unavailable: ${skipped.join('; ')})` : ''),
      };
    if (forced) throw new Error(`TFJS_BACKEND=wasm, but the WebAssembly backend is unavailable: ${r.reason}`);
    skipped.push(r.reason);
  }
  if (!(await tf.setBackend('cpu'))) throw new Error('the cpu backend failed to initialise');
  const why = skipped.length ? ` (faster backends unavailable: ${skipped.join('; ')})` : '';
  return { name: 'cpu', detail: `pure JavaScript cpu backend, for debugging only${why}` };
}
