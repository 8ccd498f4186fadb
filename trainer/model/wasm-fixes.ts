// Kernel fixes for @tensorflow/tfjs-backend-wasm 4.22, applied at the kernel registry so that every op —
// including the ones tfjs calls inside gradients — gets them. Each fix answers a measured problem (what they
// changed on a training step: bench/HISTORY.md, "Model"):
//
// 1. UnsortedSegmentSum: wasm has no such kernel, yet it is the gradient of tf.gather, i.e. of the token
//    embedding. Without it, training an embedding throws "kernel not registered". Registered here in JS.
// 2. OneHot with dtype float32 writes int32 bit patterns into a float buffer (1 reads as 1.4e-45). The fixed
//    kernel builds the int32 one-hot and casts it.
// 3. BatchMatMul is fast (XNNPACK, ~11-16 GFLOP/s on one core) only with no transpose and a batch of one;
//    anything else falls back to a naive loop at ~1 GFLOP/s. Linear layers (x Wᵀ), attention (q kᵀ) and
//    every matmul gradient hit the slow path. The wrapper transposes operands first (a cheap copy), folds a
//    batch against a shared right-hand side into one tall matrix, and otherwise loops over the batch calling
//    the fast kernel. This gave 5-10x on a training step.
//
// 4. Identity (tf.clone, and every tensor a gradient saves) copies the data; it now shares it, as the cpu
//    backend does.
//
// A fifth fix is backend-independent and lives in ops.ts: a fused log-softmax gradient (differentiating
// tf.logSumExp is slow on every backend).

import * as tf from '@tensorflow/tfjs';
import type { KernelConfig, KernelFunc, TensorInfo, NamedAttrMap } from '@tensorflow/tfjs';

// The wasm backend object: only the members these kernels need.
interface WasmBackendLike {
  makeOutput(shape: number[], dtype: tf.DataType): TensorInfo;
  typedArrayFromHeap(t: TensorInfo): Float32Array | Int32Array | Uint8Array;
  disposeData(dataId: object): boolean;
  dataIdMap: { has(dataId: object): boolean };
}

type Call = { inputs: Record<string, TensorInfo | TensorInfo[]>; backend: unknown; attrs?: NamedAttrMap };

let applied = false;

function original(name: string): KernelConfig {
  const k = tf.getKernel(name, 'wasm');
  if (!k) throw new Error(`wasm backend has no ${name} kernel to patch (is @tensorflow/tfjs-backend-wasm loaded?)`);
  return k;
}

function replace(config: KernelConfig): void {
  if (tf.getKernel(config.kernelName, 'wasm')) tf.unregisterKernel(config.kernelName, 'wasm');
  tf.registerKernel(config);
}

const sizeOf = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

// Below this many multiply-adds per batch item, batched products go to the original (naive) kernel.
const SMALL_PRODUCT = 32 * 1024;

/**
 * Transposed copies of matrices that are transposed again and again: weights in x·Wᵀ while generating, frozen
 * base weights under LoRA. Keyed by the identity of the tensor's data (tfjs data never changes in place; a
 * variable's assign() gets new data), cached only from the second time the same data is seen (activations are
 * transposed once and die) and only while the source data is alive. Bounded in bytes: when full, entries of
 * freed sources are dropped and, if there is still no room, the new one is simply not cached (no thrashing
 * for models larger than the cache). Besides the copy, a cached operand keeps its XNNPACK operator, whose
 * packed weights are then reused instead of repacked on every call.
 */
class TransposeCache {
  private readonly seen = new WeakSet<object>();
  private readonly entries = new Map<object, TensorInfo>();
  private bytes = 0;
  constructor(private readonly maxBytes: number) {}

  get(b: TensorInfo, transposeFn: (t: TensorInfo) => TensorInfo, be: WasmBackendLike): TensorInfo {
    const hit = this.entries.get(b.dataId);
    if (hit) return hit;
    const t = transposeFn(b); // one of the caller's temporaries unless copied in below
    if (!this.seen.has(b.dataId)) {
      this.seen.add(b.dataId);
      return t;
    }
    const size = sizeOf(b.shape) * 4;
    if (this.bytes + size > this.maxBytes) this.dropDead(be);
    if (this.bytes + size > this.maxBytes) return t;
    const own = copyRows(be, t, 0, [...t.shape]);
    this.entries.set(b.dataId, own);
    this.bytes += size;
    return own;
  }

  private dropDead(be: WasmBackendLike): void {
    for (const [source, v] of this.entries) {
      if (be.dataIdMap.has(source)) continue;
      this.entries.delete(source);
      be.disposeData(v.dataId);
      this.bytes -= sizeOf(v.shape) * 4;
    }
  }
}
const transposedWeights = new TransposeCache(256 * 1024 * 1024);

/** Item i of a [batch, ...rest] float32 tensor as a new tensor of shape `shape`, by a heap copy. */
function copyRows(be: WasmBackendLike, t: TensorInfo, i: number, shape: number[]): TensorInfo {
  const n = sizeOf(shape);
  const out = be.makeOutput(shape, 'float32');
  be.typedArrayFromHeap(out).set(be.typedArrayFromHeap(t).subarray(i * n, (i + 1) * n));
  return out;
}

/** Installs the fixes on the wasm kernel registry. Idempotent; call after importing the wasm backend. */
export function applyWasmFixes(): void {
  if (applied) return;
  applied = true;

  // --- 1. UnsortedSegmentSum ---
  replace({
    kernelName: 'UnsortedSegmentSum',
    backendName: 'wasm',
    kernelFunc: (({ inputs, backend, attrs }: Call) => {
      const x = inputs.x as TensorInfo;
      const ids = inputs.segmentIds as TensorInfo;
      const numSegments = attrs!.numSegments as number;
      const be = backend as WasmBackendLike;
      const inner = sizeOf(x.shape) / Math.max(1, sizeOf(ids.shape));
      const out = be.makeOutput([numSegments, ...x.shape.slice(ids.shape.length)], x.dtype);
      // Heap views are taken after makeOutput: growing the wasm memory detaches older views.
      const xs = be.typedArrayFromHeap(x);
      const seg = be.typedArrayFromHeap(ids);
      const o = be.typedArrayFromHeap(out);
      o.fill(0);
      for (let i = 0; i < seg.length; i++) {
        const s = seg[i]!;
        if (s < 0 || s >= numSegments) continue; // TensorFlow drops out-of-range ids
        const src = i * inner;
        const dst = s * inner;
        for (let j = 0; j < inner; j++) o[dst + j]! += xs[src + j]!;
      }
      return out;
    }) as unknown as KernelFunc,
  });

  // --- 2. OneHot ---
  const oneHot = original('OneHot');
  const cast = original('Cast');
  replace({
    ...oneHot,
    kernelFunc: ((args: Call) => {
      const dtype = args.attrs!.dtype as tf.DataType;
      if (dtype === 'int32') return oneHot.kernelFunc(args as never);
      const ints = oneHot.kernelFunc({ ...args, attrs: { ...args.attrs, dtype: 'int32' } } as never) as TensorInfo;
      const out = cast.kernelFunc({
        inputs: { x: ints },
        backend: args.backend,
        attrs: { dtype },
      } as never) as TensorInfo;
      (args.backend as WasmBackendLike).disposeData(ints.dataId);
      return out;
    }) as unknown as KernelFunc,
  });

  // --- 4. Identity ---
  // tfjs clones every tensor a gradient saves for the backward pass (engine.saveTensorsForBackwardMode);
  // wasm's Identity copies the data, hundreds of copies a training step. tfjs data is immutable, so sharing
  // it with a reference count is what the cpu backend does too.
  const identity = original('Identity');
  replace({
    ...identity,
    kernelFunc: ((args: Call) => {
      const x = args.inputs.x as TensorInfo;
      if (x.dtype === 'string') return identity.kernelFunc(args as never);
      (args.backend as { incRef(d: object): void }).incRef(x.dataId);
      return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
    }) as unknown as KernelFunc,
  });

  // --- 3. BatchMatMul ---
  const matMul = original('BatchMatMul');
  const reshape = original('Reshape').kernelFunc;
  replace({
    ...matMul,
    kernelFunc: ((args: Call) => {
      const a = args.inputs.a as TensorInfo;
      const b = args.inputs.b as TensorInfo;
      const transposeA = args.attrs!.transposeA as boolean;
      const transposeB = args.attrs!.transposeB as boolean;
      const be = args.backend as WasmBackendLike;
      const batchA = sizeOf(a.shape.slice(0, -2));
      const batchB = sizeOf(b.shape.slice(0, -2));
      if (!transposeA && !transposeB && batchA === 1 && batchB === 1) return matMul.kernelFunc(args as never);
      const last = (t: TensorInfo, i: number) => t.shape[t.shape.length - i]!;
      // C = op(A) op(B) with op(A): [M, K], op(B): [K, N].
      const M = transposeA ? last(a, 1) : last(a, 2);
      const K = transposeA ? last(a, 2) : last(a, 1);
      const N = transposeB ? last(b, 2) : last(b, 1);
      const Kb = transposeB ? last(b, 1) : last(b, 2);
      if (Kb !== K) {
        throw new Error(
          `Error in matMul: inner shapes (${K}) and (${Kb}) of Tensors with shapes ${a.shape} and ${b.shape} ` +
            `and transposeA=${transposeA} and transposeB=${transposeB} must match.`,
        );
      }
      const outBatchShape = tf.broadcast_util.assertAndGetBroadcastShape(a.shape.slice(0, -2), b.shape.slice(0, -2));
      // Many tiny products (attention of one new token while decoding): the per-call cost of the fast kernel
      // (copies, XNNPACK operator set-up) exceeds the naive loop's arithmetic.
      if (batchB > 1 && M * K * N < SMALL_PRODUCT) return matMul.kernelFunc(args as never);

      const temps: TensorInfo[] = [];
      const swapLast = (t: TensorInfo): TensorInfo => {
        const r = t.shape.length;
        const rows = t.shape[r - 2]!;
        const cols = t.shape[r - 1]!;
        const out = be.makeOutput([...t.shape.slice(0, -2), cols, rows], 'float32');
        temps.push(out);
        transposeLast(
          be.typedArrayFromHeap(t),
          be.typedArrayFromHeap(out),
          sizeOf(t.shape) / (rows * cols),
          rows,
          cols,
        );
        return out;
      };
      // Transposed operands are materialised (a transposed weight matrix, 2-D b, usually from the cache).
      // Computing Cᵀ = op(B)ᵀ·op(A)ᵀ instead can copy fewer numbers, but it hands XNNPACK the larger matrix
      // to pack as "weights": measured slower (7M model: 3.4 s against 3.0 s a training step).
      const a1 = transposeA ? swapLast(a) : a;
      const b1 = transposeB ? (b.shape.length === 2 ? transposedWeights.get(b, swapLast, be) : swapLast(b)) : b;
      const result = plainProduct(be, matMul.kernelFunc, reshape, a1, b1, batchA, batchB, M, K, N);
      const out = reshape({
        inputs: { x: result },
        backend: args.backend,
        attrs: { shape: [...outBatchShape, M, N] },
      } as never) as TensorInfo;
      be.disposeData(result.dataId);
      for (const t of temps) be.disposeData(t.dataId);
      return out;
    }) as unknown as KernelFunc,
  });
}

/**
 * [batch, M, N] = A·B for plain (untransposed) operands A: [batchA, M, K] and B: [batchB, K, N] (batch sizes 1
 * broadcast), always through the fast kernel: a batch against a single right-hand side as one tall product,
 * otherwise one product per batch item.
 */
function plainProduct(
  be: WasmBackendLike,
  fast: KernelFunc,
  reshape: KernelFunc,
  a: TensorInfo,
  b: TensorInfo,
  batchA: number,
  batchB: number,
  M: number,
  K: number,
  N: number,
): TensorInfo {
  const plain = { transposeA: false, transposeB: false };
  const view = (t: TensorInfo, shape: number[]) =>
    reshape({ inputs: { x: t }, backend: be, attrs: { shape } } as never) as TensorInfo;
  if (batchB === 1) {
    const a2 = view(a, [1, batchA * M, K]);
    const b2 = view(b, [1, K, N]);
    const r = fast({ inputs: { a: a2, b: b2 }, backend: be, attrs: plain } as never) as TensorInfo;
    be.disposeData(a2.dataId);
    be.disposeData(b2.dataId);
    return r;
  }
  const batch = Math.max(batchA, batchB);
  const a3 = view(a, [batchA, M, K]);
  const b3 = view(b, [batchB, K, N]);
  // Batch items are contiguous in memory: copy each operand slice out of the heap and each product into its
  // place in the output (tfjs's own Slice/Concat kernels take milliseconds for this).
  const result = be.makeOutput([batch, M, N], 'float32');
  for (let i = 0; i < batch; i++) {
    const ai = batchA === 1 ? a3 : copyRows(be, a3, i, [1, M, K]);
    const bi = copyRows(be, b3, i, [1, K, N]);
    const oi = fast({ inputs: { a: ai, b: bi }, backend: be, attrs: plain } as never) as TensorInfo;
    be.typedArrayFromHeap(result).set(be.typedArrayFromHeap(oi), i * M * N);
    be.disposeData(oi.dataId);
    if (ai !== a3) be.disposeData(ai.dataId);
    be.disposeData(bi.dataId);
  }
  be.disposeData(a3.dataId);
  be.disposeData(b3.dataId);
  return result;
}

/** Swaps the last two axes of [batch, rows, cols] into dst, in 32×32 blocks (faster than wasm's Transpose). */
function transposeLast(
  src: ArrayLike<number>,
  dst: { [i: number]: number },
  batch: number,
  rows: number,
  cols: number,
): void {
  const B = 32;
  for (let b = 0; b < batch; b++) {
    const o = b * rows * cols;
    for (let i0 = 0; i0 < rows; i0 += B) {
      const i1 = Math.min(rows, i0 + B);
      for (let j0 = 0; j0 < cols; j0 += B) {
        const j1 = Math.min(cols, j0 + B);
        for (let i = i0; i < i1; i++) {
          const si = o + i * cols;
          for (let j = j0; j < j1; j++) dst[o + j * rows + i] = src[si + j]!;
        }
      }
    }
  }
}
