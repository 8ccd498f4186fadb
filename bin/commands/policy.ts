// `sweetloop policy add|update|remove|list`: GGUF model files run by Sweetloop's llama.cpp engine (`add --gguf
// FILE|hf:...`), policy versions served by an OpenAI-compatible server (vLLM, SGLang,
// llama.cpp's server, TGI, Ollama, hosted APIs) or as a LoRA adapter on one (`add --adapter DIR --on ENDPOINT`),
// moving an endpoint version to another address, taking a version out of service, and every version with where
// it is served. `sweetloop deploy NAME` and `sweetloop rollback` are deploy.ts.
import { join } from 'node:path';
import type { Command } from 'commander';
import { withDatabase } from './with-database.ts';
import { intOption, numberOption } from './options.ts';
import { deployOrSay } from './deploy.ts';

interface AddOptions {
  endpoint?: string;
  gguf?: string;
  deploy?: boolean;
  model?: string;
  adapter?: string;
  on?: string;
  maxLoraRank?: number;
  maxInFlight?: number;
  apiKeyEnv?: string;
  contextWindow?: number;
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  baseModelDir?: string;
  recordTokens?: boolean;
  revision?: string;
  check: boolean;
}

const RECORD_TOKENS =
  "store each agent turn's exact token ids, log-probabilities and weights version (the server then computes every token's log-probability, which costs it time; vLLM and Sweetloop's own server give the ids)";
const REVISION =
  "the served weights' revision (e.g. the Hugging Face commit vLLM was started with), recorded with the tokens";

/** What `policy add` and `update` say of token recording (trainer/policies/serving.ts recordTokens). */
function tokensNote(s: { recordTokens?: boolean | null; revision?: string | null }): string {
  if (!s.recordTokens) return '';
  return `; records each agent turn's tokens (${s.revision ? `revision ${s.revision}` : 'no revision given: --revision REV names the weights'})`;
}

export function registerPolicyCommands(program: Command): void {
  const policy = program
    .command('policy')
    .description(
      'Register, move and remove policy versions served by OpenAI-compatible servers (models or LoRA adapters on them), and list every version',
    );

  policy
    .command('add <name>')
    .description(
      "Register a GGUF model run by Sweetloop's own llama.cpp engine (--gguf), a version served by an OpenAI-compatible server (--endpoint) or a LoRA adapter on one (--adapter --on); a candidate: deploy it with `sweetloop deploy` (or --deploy)",
    )
    .option(
      '--gguf <file|hf:OWNER/REPO/FILE.gguf>',
      'a GGUF model file (e.g. a quantized instruct model), or one on the Hugging Face hub, downloaded once into MODELS_DIR: checked, then served by llama.cpp with its own tokenizer and chat template',
    )
    .option('--deploy', 'deploy the version once it is registered')
    .option('--endpoint <url>', "the server's base URL, e.g. http://127.0.0.1:8000/v1")
    .option('--model <model>', 'with --endpoint: the model name the server serves (as listed by GET /v1/models)')
    .option(
      '--adapter <dir>',
      'a PEFT LoRA adapter directory (adapter_config.json + adapter_model.safetensors): checked, copied into ADAPTERS_DIR',
    )
    .option(
      '--on <endpoint-version>',
      "with --adapter: the endpoint version whose server serves the adapter's base model",
    )
    .option('--api-key-env <var>', 'NAME of the environment variable holding the key (the key itself is never stored)')
    .option(
      '--context-window <n>',
      "the model's context window in tokens (default: the server's max_model_len)",
      intOption('context-window', 256),
    )
    .option('--temperature <t>', 'sampling temperature (default 0.7)', numberOption('temperature', 0, 2))
    .option('--top-p <p>', 'nucleus sampling (default 0.95)', numberOption('top-p', 0, 1, true))
    .option('--max-tokens <n>', 'longest agent message in tokens (default 1024)', intOption('max-tokens', 1))
    .option(
      '--base-model-dir <dir>',
      "the served model's Hugging Face directory: exact token counts, and the base for LoRA training",
    )
    .option(
      '--max-lora-rank <n>',
      "the server's largest LoRA rank (vLLM --max-lora-rank; default: VLLM_MAX_LORA_RANK)",
      intOption('max-lora-rank', 1),
    )
    .option(
      '--max-in-flight <n>',
      'requests the bot keeps in flight to the server at once, the rest waiting in the bot (what it batches: vLLM --max-num-seqs; default 16)',
      intOption('max-in-flight', 1),
    )
    .option('--record-tokens', RECORD_TOKENS)
    .option('--revision <rev>', REVISION)
    .option('--no-check', 'register without asking the server (it must then answer by the time the version is used)')
    .action(async (name: string, o: AddOptions) => {
      if (o.gguf) {
        const other = (
          [
            'endpoint',
            'adapter',
            'on',
            'model',
            'apiKeyEnv',
            'contextWindow',
            'maxLoraRank',
            'maxInFlight',
            'recordTokens',
            'revision',
          ] as const
        ).filter((k) => o[k] !== undefined);
        if (other.length)
          throw new Error(
            `--gguf registers a file run by Sweetloop itself: drop ${other.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')}`,
          );
        return addGguf(name, o.gguf, o);
      }
      if (!!o.endpoint === !!o.adapter)
        throw new Error(
          'give either --endpoint URL --model MODEL (a model on a server) or --adapter DIR --on ENDPOINT_VERSION (a LoRA adapter on one)',
        );
      if (o.adapter) {
        // An adapter is served with its endpoint version's settings: options of an endpoint would be ignored.
        const endpointOnly = (
          [
            'model',
            'apiKeyEnv',
            'contextWindow',
            'temperature',
            'topP',
            'maxTokens',
            'baseModelDir',
            'maxLoraRank',
            'maxInFlight',
            'recordTokens',
            'revision',
          ] as const
        ).filter((k) => o[k] !== undefined);
        if (endpointOnly.length)
          throw new Error(
            `--adapter takes its endpoint version's settings: drop ${endpointOnly.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')}`,
          );
        return addAdapter(name, o.adapter, o.on);
      }
      if (o.on) throw new Error('--on goes with --adapter DIR');
      if (!o.model) throw new Error('--endpoint needs --model MODEL: the model name the server serves');
      const { registerEndpointVersion } = await import('../../trainer/policies/registry.ts');
      const { servedAt, servingOf } = await import('../../trainer/policies/serving.ts');
      await withDatabase(async (db) => {
        const v = await registerEndpointVersion(db.prisma, {
          name,
          url: o.endpoint!,
          model: o.model!,
          apiKeyEnv: o.apiKeyEnv,
          contextWindow: o.contextWindow,
          temperature: o.temperature,
          topP: o.topP,
          maxTokens: o.maxTokens,
          baseModelDir: o.baseModelDir,
          maxLoraRank: o.maxLoraRank,
          maxInFlight: o.maxInFlight,
          recordTokens: o.recordTokens,
          revision: o.revision,
          check: o.check,
        });
        const s = servingOf(v);
        console.log(
          `registered ${v.name} (endpoint, candidate): ${servedAt(v)}, window ${s.contextWindow} tokens, temperature ${s.temperature}, top-p ${s.topP}, max ${s.maxTokens} tokens${tokensNote(s)}`,
        );
        await deployOrSay(db, v.name, o.deploy);
      });
    });

  policy
    .command('update <name>')
    .description(
      "Move an endpoint version to another server address (its adapter versions follow), or record its server's largest LoRA rank, how many requests it takes at once, its model's Hugging Face directory, whether its turns' exact tokens are stored and its weights' revision",
    )
    .option('--endpoint <url>', "the server's new base URL")
    .option(
      '--max-lora-rank <n>',
      "the server's largest LoRA rank (vLLM --max-lora-rank)",
      intOption('max-lora-rank', 1),
    )
    .option(
      '--max-in-flight <n>',
      "requests the bot keeps in flight to the server at once (vLLM --max-num-seqs; a higher number than before takes effect at the bot's next start)",
      intOption('max-in-flight', 1),
    )
    .option(
      '--base-model-dir <dir>',
      "the served model's Hugging Face directory: exact token counts, and the base the trainer trains LoRA adapters on",
    )
    .option(
      '--record-tokens',
      `${RECORD_TOKENS}; agents the bot loaded before keep their setting until it loads them again (a deploy, or a restart)`,
    )
    .option('--no-record-tokens', 'stop storing them')
    .option('--revision <rev>', REVISION)
    .option('--no-check', 'change it without asking the new address that it serves the model')
    .action(
      async (
        name: string,
        o: {
          endpoint?: string;
          maxLoraRank?: number;
          maxInFlight?: number;
          baseModelDir?: string;
          recordTokens?: boolean;
          revision?: string;
          check: boolean;
        },
      ) => {
        const { updateEndpointVersion } = await import('../../trainer/policies/lifecycle.ts');
        const { servedAt, servingOf } = await import('../../trainer/policies/serving.ts');
        await withDatabase(async (db) => {
          const { version, adapters } = await updateEndpointVersion(db.prisma, name, {
            url: o.endpoint,
            maxLoraRank: o.maxLoraRank,
            maxInFlight: o.maxInFlight,
            baseModelDir: o.baseModelDir,
            recordTokens: o.recordTokens,
            revision: o.revision,
            check: o.check,
            actor: 'cli',
          });
          const s = servingOf(version);
          console.log(
            `updated ${version.name}: ${servedAt(version)}${o.recordTokens === false ? "; its turns' tokens are not recorded" : tokensNote(s)}${adapters.length ? `; its adapter versions follow: ${adapters.join(', ')}` : ''}`,
          );
        });
      },
    );

  policy
    .command('remove <name>')
    .description(
      'Take a version out of service (never the deployed one): kept for the record, unloaded from its server if an adapter',
    )
    .action(async (name: string) => {
      const { removeVersion } = await import('../../trainer/policies/lifecycle.ts');
      await withDatabase(async (db) => {
        const { version, unload } = await removeVersion(db.prisma, name, { actor: 'cli' });
        console.log(
          `removed ${version.name} (${version.kind})${unload ? `; adapter ${unload === 'unloaded' ? 'unloaded from its server' : unload === 'not loaded' ? 'was not loaded on its server' : 'not unloaded: its server is unavailable'}` : ''}`,
        );
      });
    });

  policy
    .command('list')
    .description(
      "List every policy version with its kind, status, whether its turns' tokens are recorded (--record-tokens) and where it is served, marking those trained on erased data",
    )
    .option('--json', 'print the versions as JSON')
    .action(async (o: { json?: boolean }) => {
      const { recordsTokens, servedAt } = await import('../../trainer/policies/serving.ts');
      const { ERASED_DATA_MARK, trainedOnErasedData } = await import('../../prisma/policy-store.ts');
      await withDatabase(async (db) => {
        const versions = await db.prisma.policyVersion.findMany({ orderBy: { createdAt: 'asc' } });
        const byId = new Map(versions.map((v) => [v.id, v]));
        const rows = versions.map((v) => ({
          name: v.name,
          kind: v.kind,
          status: v.status,
          algorithm: v.algorithm,
          recordsTokens: recordsTokens(v, byId),
          servedAt: servedAt(v, byId),
          createdAt: v.createdAt.toISOString(),
          trainedOnErasedData: trainedOnErasedData(v),
        }));
        if (o.json) return console.log(JSON.stringify(rows, null, 2));
        if (rows.length === 0)
          return console.log(
            'no policy versions yet (`sweetloop start` creates the starter; `sweetloop policy add` registers an endpoint)',
          );
        const w = (k: 'name' | 'kind' | 'status') => Math.max(k.length, ...rows.map((r) => r[k].length));
        const line = (a: string, b: string, c: string, tokens: string, d: string) =>
          `${a.padEnd(w('name'))}  ${b.padEnd(w('kind'))}  ${c.padEnd(w('status'))}  ${tokens.padEnd(6)}  ${d}`;
        console.log(line('name', 'kind', 'status', 'tokens', 'served at'));
        for (const r of rows)
          console.log(
            line(r.name, r.kind, r.status, r.recordsTokens ? 'yes' : 'no', r.servedAt) +
              (r.trainedOnErasedData ? `  ${ERASED_DATA_MARK}` : ''),
          );
        if (rows.some((r) => r.trainedOnErasedData)) {
          console.log(
            `\n${ERASED_DATA_MARK}: trained on sessions of a person whose data was deleted since; deploying it needs \`--force\` (audited)`,
          );
        }
      });
    });
}

async function addAdapter(name: string, dir: string, on: string | undefined): Promise<void> {
  if (!on)
    throw new Error(
      "--adapter needs --on ENDPOINT_VERSION: the endpoint version whose server serves the adapter's base model",
    );
  const { loadConfig } = await import('../config.ts');
  const { importAdapterVersion } = await import('../../trainer/policies/adapter-import.ts');
  const config = loadConfig();
  await withDatabase(async (db) => {
    const { version, adapter } = await importAdapterVersion(db.prisma, {
      name,
      on,
      adapterDir: dir,
      adaptersDir: config.ADAPTERS_DIR ?? join(config.CHECKPOINT_DIR, 'adapters'),
      defaultMaxRank: config.VLLM_MAX_LORA_RANK,
      actor: 'cli',
    });
    console.log(
      `registered ${version.name} (adapter on ${on}, candidate): rank ${adapter.rank}, ${adapter.modules} modules, base ${adapter.baseModel}, copied to ${version.checkpointPath}`,
    );
    console.log(`deploy it with: sweetloop deploy ${version.name}`);
  });
}

async function addGguf(name: string, source: string, o: AddOptions): Promise<void> {
  const { loadConfig } = await import('../config.ts');
  const { registerGgufVersion } = await import('../../trainer/policies/registry.ts');
  const { servedAt } = await import('../../trainer/policies/serving.ts');
  const config = loadConfig();
  let shown = -1;
  await withDatabase(async (db) => {
    const { version, downloaded } = await registerGgufVersion(db.prisma, {
      name,
      source,
      modelsDir: config.MODELS_DIR,
      temperature: o.temperature,
      topP: o.topP,
      maxTokens: o.maxTokens,
      baseModelDir: o.baseModelDir,
      ...(config.HF_TOKEN ? { hubToken: config.HF_TOKEN } : {}),
      audit: { actor: 'cli', action: 'policy.add' },
      onProgress: ({ downloadedBytes, totalBytes }) => {
        const pct = totalBytes > 0 ? Math.floor((100 * downloadedBytes) / totalBytes) : 0;
        if (pct === shown) return;
        shown = pct;
        process.stderr.write(`\rdownloading ${source}: ${pct}% of ${(totalBytes / 1e6).toFixed(0)} MB`);
        if (downloadedBytes >= totalBytes) process.stderr.write('\n');
      },
    });
    console.log(
      `registered ${version.name} (gguf, candidate${downloaded ? ', downloaded' : ''}): ${servedAt(version)}, sha256 ${version.checkpointSha256}`,
    );
    await deployOrSay(db, version.name, o.deploy);
  });
}
