// npm run bench:model — training and generation speed of the tfjs decoder against the same model in PyTorch
// (testing/model_torch.py, Debian python3-torch on the CPU) in the same run, at ~1M and ~7M parameters.
// Prints a table, where the time goes (kernel profile), and one JSON line.
//
//   npm run bench:model                       both sizes
//   npm run bench:model -- --sizes 1M --steps 3   (timed training steps per size; best and mean reported)
//   TFJS_BACKEND is not read here: pass --backend wasm|cpu|tensorflow (default: best available)

import * as tf from '@tensorflow/tfjs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { llamaConfig, parameterCount, toHfConfig, type ModelConfig } from '../trainer/model/architecture.ts';
import { initBackend, type BackendChoice } from '../trainer/model/backend.ts';
import { Decoder, disposeCache } from '../trainer/model/decoder.ts';
import { generate } from '../trainer/model/generate.ts';
import { crossEntropy } from '../trainer/model/ops.ts';
import { AdamW } from '../trainer/model/optim.ts';
import { TrainStep } from '../trainer/model/train-step.ts';
import type { TextTokenizer } from '../trainer/model/tokenizer.ts';

interface Size {
  label: string;
  config: ModelConfig;
  batch: number;
  seq: number;
  genBatch: number;
  genPrompt: number;
  genTokens: number;
}

const GEN_REPEATS = 3;

const SIZES: Size[] = [
  {
    label: '1M',
    config: llamaConfig({
      vocabSize: 2048,
      hiddenSize: 128,
      intermediateSize: 344,
      numLayers: 4,
      numHeads: 4,
      tieWordEmbeddings: true,
    }),
    batch: 4,
    seq: 256,
    genBatch: 4,
    genPrompt: 32,
    genTokens: 64,
  },
  {
    label: '7M',
    config: llamaConfig({
      vocabSize: 8192,
      hiddenSize: 256,
      intermediateSize: 688,
      numLayers: 6,
      numHeads: 8,
      numKvHeads: 4,
      tieWordEmbeddings: true,
    }),
    batch: 4,
    seq: 256,
    genBatch: 4,
    genPrompt: 32,
    genTokens: 64,
  },
];

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

// generate.ts needs only these members of a tokenizer when no stop strings are given; random-weight bench
// models have no tokenizer, and decoding text is not what is measured here.
const idTokenizer = {
  eosTokenIds: [] as number[],
  padTokenId: 0,
  decode: (ids: number[]) => ids.join(' '),
} as unknown as TextTokenizer;

interface Profile {
  total: number;
  top: { kernel: string; ms: number; share: number; calls: number }[];
}

/**
 * CPU seconds of this process since `start`. Both sides are single-threaded, so CPU time is what a step costs
 * on an idle core; wall time also counts waiting for the cores other processes hold.
 */
function cpuSeconds(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1e6;
}

async function profile(f: () => void): Promise<Profile> {
  const info = await tf.profile(f);
  const agg = new Map<string, { ms: number; calls: number }>();
  for (const k of info.kernels) {
    const key = k.name === 'BatchMatMul' ? `BatchMatMul ${k.inputShapes.map((s) => `[${s}]`).join('x')}` : k.name;
    const a = agg.get(key) ?? { ms: 0, calls: 0 };
    a.ms += Number(k.kernelTimeMs) || 0;
    a.calls += 1;
    agg.set(key, a);
  }
  const total = [...agg.values()].reduce((s, a) => s + a.ms, 0);
  const top = [...agg.entries()]
    .sort((a, b) => b[1].ms - a[1].ms)
    .slice(0, 8)
    .map(([kernel, a]) => ({ kernel, ms: +a.ms.toFixed(1), share: +(a.ms / total).toFixed(3), calls: a.calls }));
  // Matmuls in total, whatever their shapes.
  const matmul = [...agg.entries()].filter(([k]) => k.startsWith('BatchMatMul')).reduce((s, [, a]) => s + a.ms, 0);
  top.unshift({
    kernel: 'BatchMatMul (all shapes)',
    ms: +matmul.toFixed(1),
    share: +(matmul / total).toFixed(3),
    calls: 0,
  });
  return { total: +total.toFixed(1), top };
}

/** Raw single-matmul throughput of the active backend (512³, the operand cached as weights are), GFLOP/s. */
function sgemmGflops(): number {
  const a = tf.randomNormal([512, 512]);
  const b = tf.randomNormal([512, 512]);
  tf.matMul(a, b).dispose();
  const t0 = performance.now();
  for (let i = 0; i < 10; i++) {
    const c = tf.matMul(a, b);
    c.dataSync();
    c.dispose();
  }
  const s = (performance.now() - t0) / 1000;
  tf.dispose([a, b]);
  return +((10 * 2 * 512 ** 3) / s / 1e9).toFixed(1);
}

async function benchTfjs(size: Size, steps: number) {
  const model = new Decoder(size.config, { seed: 0, name: `bench${size.label}` });
  const optimizer = new AdamW(model.namedTrainableVariables(), { lr: 1e-3 });
  const trainer = new TrainStep({ optimizer, maxGradNorm: 1 });
  const V = size.config.vocabSize;
  const ids = tf.randomUniform([size.batch, size.seq + 1], 0, V, 'int32', 1) as tf.Tensor2D;
  const input = tf.slice(ids, [0, 0], [size.batch, size.seq]) as tf.Tensor2D;
  const target = tf.slice(ids, [0, 1], [size.batch, size.seq]) as tf.Tensor2D;
  const loss = () => crossEntropy(model.forward(input).logits, target);
  trainer.run(loss); // warm-up: kernel setup, XNNPACK operator creation
  // Best of `steps` (and the mean): other processes share the cores, the minimum is the least disturbed.
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < steps; i++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    trainer.run(loss);
    times.push((performance.now() - t0) / 1000);
    cpu.push(cpuSeconds(c0));
  }
  const trainStep = Math.min(...times);
  const trainMean = times.reduce((a, b) => a + b, 0) / times.length;
  const trainProfile = await profile(() => {
    trainer.run(loss);
  });

  let s = 7;
  const rnd = () => (s = (s * 48271) % 2147483647) % V;
  const prompts = Array.from({ length: size.genBatch }, () => Array.from({ length: size.genPrompt }, rnd));
  const opts = { maxTokens: size.genTokens, temperature: 0, eosTokenIds: [] };
  await generate(model, idTokenizer, prompts, { ...opts, maxTokens: 4 });
  const genTimes: number[] = [];
  let generated = 0;
  const genCpu: number[] = [];
  for (let i = 0; i < GEN_REPEATS; i++) {
    const g0 = performance.now();
    const c0 = process.cpuUsage();
    const out = await generate(model, idTokenizer, prompts, opts);
    genTimes.push((performance.now() - g0) / 1000);
    genCpu.push(cpuSeconds(c0));
    generated = out.reduce((n, r) => n + r.tokenIds.length, 0);
  }
  const genS = Math.min(...genTimes);
  const genMean = genTimes.reduce((a, b) => a + b, 0) / genTimes.length;
  // Profile of one cached decoding step (batch genBatch, one new token each, cache of genPrompt positions).
  const first = model.forward(tf.tensor2d(prompts, undefined, 'int32'), { returnCache: true, lastOnly: true });
  const genProfile = await profile(() => {
    tf.dispose(
      model.forward(
        tf.tensor2d(
          prompts.map((p) => [p[0]!]),
          undefined,
          'int32',
        ),
        { cache: first.cache, lastOnly: true },
      ) as never,
    );
  });
  tf.dispose([ids, input, target, first.logits]);
  disposeCache(first.cache);
  optimizer.dispose();
  trainer.dispose();
  model.dispose();
  return {
    trainTokensPerS: (size.batch * size.seq) / trainStep,
    trainTokensPerSMean: (size.batch * size.seq) / trainMean,
    trainStepS: trainStep,
    genTokensPerS: generated / genS,
    genTokensPerSMean: generated / genMean,
    trainTokensPerCpuS: (size.batch * size.seq) / Math.min(...cpu),
    genTokensPerCpuS: generated / Math.min(...genCpu),
    genS,
    trainProfile,
    genProfile,
  };
}

function benchTorch(size: Size, steps: number) {
  const cfg = {
    ...toHfConfig(size.config),
    bench_batch: size.batch,
    bench_seq: size.seq,
    bench_steps: steps,
    bench_warmup: 1,
    gen_batch: size.genBatch,
    gen_prompt: size.genPrompt,
    gen_tokens: size.genTokens,
    gen_repeats: GEN_REPEATS,
  };
  const out = execFileSync('/usr/bin/python3', ['testing/model_torch.py', 'bench', JSON.stringify(cfg)], {
    encoding: 'utf8',
    env: { ...process.env, OPENBLAS_NUM_THREADS: '1', OMP_NUM_THREADS: '1', TORCH_THREADS: '1' },
  });
  return JSON.parse(out.trim().split('\n').at(-1)!) as {
    train_tokens_per_s: number;
    gen_tokens_per_s: number;
    train_tokens_per_s_mean: number;
    gen_tokens_per_s_mean: number;
    train_tokens_per_cpu_s: number;
    gen_tokens_per_cpu_s: number;
    params: number;
    blas: string;
    torch_threads: number;
    sgemm_512_gflops: number;
    torch: string;
  };
}

async function main() {
  const backend = await initBackend(arg('backend') as BackendChoice | undefined);
  const steps = Number(arg('steps') ?? 4);
  const wanted = (arg('sizes') ?? '1M,7M').split(',');
  const loadBefore = os.loadavg();
  const tfjsSgemm = sgemmGflops();
  const rows = [];
  for (const size of SIZES.filter((s) => wanted.includes(s.label))) {
    process.stderr.write(`[bench:model] ${size.label}: tfjs (${backend.name}) ...\n`);
    const t = await benchTfjs(size, steps);
    process.stderr.write(`[bench:model] ${size.label}: PyTorch ...\n`);
    const p = benchTorch(size, steps);
    if (p.params !== parameterCount(size.config))
      throw new Error(`PyTorch twin has ${p.params} parameters, tfjs ${parameterCount(size.config)}`);
    rows.push({
      size: size.label,
      params: p.params,
      tfjs: t,
      torch: p,
      tokensPerStep: size.batch * size.seq,
      gen: `${size.genBatch}x${size.genTokens} after ${size.genPrompt}-token prompts`,
    });
  }
  const loadAfter = os.loadavg();
  const torchInfo = rows[0]?.torch;
  console.log(`tfjs backend: ${backend.name} — ${backend.detail}`);
  console.log(
    `PyTorch ${torchInfo?.torch}, BLAS ${torchInfo?.blas}, ${torchInfo?.torch_threads} thread(s), sgemm 512³ ${torchInfo?.sgemm_512_gflops} GFLOP/s`,
  );
  console.log(`tfjs ${backend.name} matmul 512³: ${tfjsSgemm} GFLOP/s (single thread)`);
  console.log(
    `load average (1 min) before ${loadBefore[0]!.toFixed(2)}, after ${loadAfter[0]!.toFixed(2)} on ${os.cpus().length} cores; generation uses trainer/model/generate.ts (greedy, batched, KV cache)`,
  );
  console.log('');
  console.log('size  params     train tok/s tfjs  torch   ratio   gen tok/s tfjs  torch   ratio');
  for (const r of rows) {
    const tr = r.torch.train_tokens_per_s / r.tfjs.trainTokensPerS;
    const gr = r.torch.gen_tokens_per_s / r.tfjs.genTokensPerS;
    console.log(
      `${r.size.padEnd(5)} ${String(r.params).padEnd(10)} ${r.tfjs.trainTokensPerS.toFixed(0).padStart(16)} ${r.torch.train_tokens_per_s.toFixed(0).padStart(6)} ${(tr.toFixed(2) + 'x').padStart(7)}` +
        ` ${r.tfjs.genTokensPerS.toFixed(0).padStart(14)} ${r.torch.gen_tokens_per_s.toFixed(0).padStart(6)} ${(gr.toFixed(2) + 'x').padStart(7)}`,
    );
  }
  console.log(
    '(wall clock, best of the timed steps / generations; ratio = PyTorch / tfjs: how many times slower tfjs is)',
  );
  console.log('\nper CPU second (robust to other load; both sides single-threaded):');
  console.log('size  train tok/cpu-s tfjs  torch   ratio   gen tok/cpu-s tfjs  torch   ratio');
  for (const r of rows) {
    const tr = r.torch.train_tokens_per_cpu_s / r.tfjs.trainTokensPerCpuS;
    const gr = r.torch.gen_tokens_per_cpu_s / r.tfjs.genTokensPerCpuS;
    console.log(
      `${r.size.padEnd(5)} ${r.tfjs.trainTokensPerCpuS.toFixed(0).padStart(20)} ${r.torch.train_tokens_per_cpu_s.toFixed(0).padStart(6)} ${(tr.toFixed(2) + 'x').padStart(7)}` +
        ` ${r.tfjs.genTokensPerCpuS.toFixed(0).padStart(18)} ${r.torch.gen_tokens_per_cpu_s.toFixed(0).padStart(6)} ${(gr.toFixed(2) + 'x').padStart(7)}`,
    );
  }
  for (const r of rows) {
    console.log(
      `${r.size} means: train tfjs ${r.tfjs.trainTokensPerSMean.toFixed(0)} torch ${r.torch.train_tokens_per_s_mean.toFixed(0)} tok/s; ` +
        `gen tfjs ${r.tfjs.genTokensPerSMean.toFixed(0)} torch ${r.torch.gen_tokens_per_s_mean.toFixed(0)} tok/s`,
    );
  }
  for (const r of rows) {
    for (const [what, p] of [
      ['training step', r.tfjs.trainProfile],
      ['decoding step', r.tfjs.genProfile],
    ] as const) {
      console.log(`\n${r.size} ${what}: ${p.total} ms in kernels; top:`);
      for (const k of p.top)
        console.log(
          `  ${(k.share * 100).toFixed(1).padStart(5)}%  ${String(k.ms).padStart(8)} ms  ${k.calls ? `${k.calls}x ` : ''}${k.kernel}`,
        );
    }
  }
  console.log(
    JSON.stringify({
      bench: 'model',
      backend: backend.name,
      tfjsSgemmGflops: tfjsSgemm,
      loadavg: { before: loadBefore, after: loadAfter },
      cores: os.cpus().length,
      torch: torchInfo && {
        version: torchInfo.torch,
        blas: torchInfo.blas,
        threads: torchInfo.torch_threads,
        sgemmGflops: torchInfo.sgemm_512_gflops,
      },
      results: rows.map((r) => ({
        size: r.size,
        params: r.params,
        tokensPerStep: r.tokensPerStep,
        trainTokensPerS: {
          tfjs: +r.tfjs.trainTokensPerS.toFixed(1),
          torch: +r.torch.train_tokens_per_s.toFixed(1),
          ratio: +(r.torch.train_tokens_per_s / r.tfjs.trainTokensPerS).toFixed(2),
          tfjsMean: +r.tfjs.trainTokensPerSMean.toFixed(1),
          torchMean: +r.torch.train_tokens_per_s_mean.toFixed(1),
        },
        trainTokensPerCpuS: {
          tfjs: +r.tfjs.trainTokensPerCpuS.toFixed(1),
          torch: +r.torch.train_tokens_per_cpu_s.toFixed(1),
          ratio: +(r.torch.train_tokens_per_cpu_s / r.tfjs.trainTokensPerCpuS).toFixed(2),
        },
        genTokensPerCpuS: {
          tfjs: +r.tfjs.genTokensPerCpuS.toFixed(1),
          torch: +r.torch.gen_tokens_per_cpu_s.toFixed(1),
          ratio: +(r.torch.gen_tokens_per_cpu_s / r.tfjs.genTokensPerCpuS).toFixed(2),
        },
        genTokensPerS: {
          tfjs: +r.tfjs.genTokensPerS.toFixed(1),
          torch: +r.torch.gen_tokens_per_s.toFixed(1),
          ratio: +(r.torch.gen_tokens_per_s / r.tfjs.genTokensPerS).toFixed(2),
          tfjsMean: +r.tfjs.genTokensPerSMean.toFixed(1),
          torchMean: +r.torch.gen_tokens_per_s_mean.toFixed(1),
        },
      })),
    }),
  );
}

await main();
