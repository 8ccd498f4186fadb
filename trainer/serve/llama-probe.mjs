// trainer/serve/: serving a policy. Files here may import tasks/, prisma/ and trainer/ only.
//
// Child-process probe for a GGUF file (llama-load.ts runs it): llama.cpp answers some malformed files with a
// C assert that ends the process, so a file is first loaded here, in a throwaway process, and only loaded into
// the server once this exits 0. Usage: node llama-probe.mjs <model.gguf> [<adapter.gguf>]
// Plain JavaScript (no tsx) so that it starts fast and imports nothing of the project.
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';

const [modelPath, adapterPath] = process.argv.slice(2);
if (!modelPath) {
  process.stderr.write('usage: llama-probe.mjs <model.gguf> [<adapter.gguf>]\n');
  process.exit(2);
}
const llama = await getLlama({ gpu: false, build: 'never', skipDownload: true, logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({
  sequences: 1,
  contextSize: 32,
  threads: 1,
  ...(adapterPath ? { lora: { adapters: [{ filePath: adapterPath, scale: 1 }] } } : {}),
});
const sequence = context.getSequence();
// One forward pass and one sampled token exercise the graph the server will run.
const iterator = sequence.evaluate([0], { temperature: 0, yieldEogToken: true });
await iterator.next();
await iterator.return();
await context.dispose();
await model.dispose();
process.stdout.write('{"ok":true}\n');
process.exit(0);
