// What a run trains on (trainer/training-source.ts), decided from the version asked for and facts about it: pure.
import { describe, expect, it } from 'vitest';
import { chooseStart, decideTrainingSource, type LoraSpec, type SourceFacts } from '../../trainer/training-source.ts';

const LORA: LoraSpec = { rank: 8, alpha: 16, targetModules: ['q_proj', 'v_proj'] };
const served = (baseModelDir: string | null, maxLoraRank = 16) => ({
  endpointVersionId: '00000000-0000-4000-8000-000000000001',
  endpointName: 'llama-8b',
  url: 'http://vllm:8000/v1',
  model: 'meta-llama/Llama-3.1-8B-Instruct',
  baseModelDir,
  maxLoraRank,
});
const endpoint = (baseModelDir: string | null, maxLoraRank?: number): SourceFacts => ({
  id: 'e',
  name: 'llama-8b',
  kind: 'endpoint',
  served: served(baseModelDir, maxLoraRank),
});
const adapter = (a: SourceFacts['adapter']): SourceFacts => ({
  id: 'a',
  name: 'sweet-1',
  kind: 'adapter',
  served: served('/models/llama'),
  adapter: a,
});

describe('decideTrainingSource', () => {
  it('an own checkpoint: its weights, full fine-tuning or LoRA as asked; a missing one cannot train', () => {
    const f: SourceFacts = {
      id: 'c',
      name: 'starter',
      kind: 'checkpoint',
      checkpoint: { dir: '/ck/starter', exists: true },
    };
    expect(decideTrainingSource(f, { lora: null, loraExplicit: false })).toMatchObject({
      ok: true,
      fromId: 'c',
      baseDir: '/ck/starter',
      lora: null,
    });
    expect(decideTrainingSource(f, { lora: LORA, loraExplicit: true })).toMatchObject({ ok: true, lora: LORA });
    const gone = decideTrainingSource(
      { ...f, checkpoint: { dir: '/ck/starter', exists: false } },
      { lora: null, loraExplicit: false },
    );
    expect(gone).toEqual({ ok: false, reason: 'the checkpoint of "starter" (/ck/starter) is missing' });
  });

  it('an endpoint without a base directory cannot train, and the reason says how to give one', () => {
    const r = decideTrainingSource(endpoint(null), { lora: LORA, loraExplicit: false });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.reason).toMatch(
      /^"llama-8b" is served by http:\/\/vllm:8000\/v1 \(model meta-llama\/Llama-3\.1-8B-Instruct\) without a local copy of its base model/,
    );
    expect(r.reason).toContain('--base-model-dir DIR');
  });

  it("an endpoint with a base directory: a fresh adapter of the requested rank on it, within the server's rank", () => {
    const r = decideTrainingSource(endpoint('/models/llama'), { lora: LORA, loraExplicit: false });
    expect(r).toMatchObject({
      ok: true,
      fromId: 'e',
      baseDir: '/models/llama',
      endpointVersionId: served(null).endpointVersionId,
      lora: LORA,
    });
    expect(r.ok && r.continueAdapter).toBeFalsy();
    expect(r.ok && r.summary).toMatch(/a fresh adapter, LoRA rank 8 \(alpha 16; q_proj, v_proj\).*no adapter deployed/);
    const tooBig = decideTrainingSource(endpoint('/models/llama', 4), { lora: LORA, loraExplicit: false });
    expect(tooBig).toMatchObject({ ok: false });
    expect(!tooBig.ok && tooBig.reason).toMatch(
      /LoRA rank 8 is above the largest rank the server of "llama-8b" loads \(4; vLLM --max-lora-rank\)/,
    );
    // No LoRA asked for: a served model cannot be fully fine-tuned here.
    expect(decideTrainingSource(endpoint('/models/llama'), { lora: null, loraExplicit: false })).toMatchObject({
      ok: false,
    });
  });

  it('an adapter version: continues its adapter at its own settings; conflicting explicit settings are refused', () => {
    const a = adapter({ dir: '/adapters/sweet-1', rank: 4, alpha: 4, targetModules: ['q_proj', 'k_proj'] });
    const r = decideTrainingSource(a, { lora: LORA, loraExplicit: false });
    expect(r).toMatchObject({
      ok: true,
      fromId: 'a',
      baseDir: '/models/llama',
      continueAdapter: '/adapters/sweet-1',
      lora: { rank: 4, alpha: 4, targetModules: ['q_proj', 'k_proj'] },
    });
    expect(r.ok && r.summary).toMatch(/continuing its adapter, LoRA rank 4/);
    const refused = decideTrainingSource(a, { lora: LORA, loraExplicit: true });
    expect(!refused.ok && refused.reason).toMatch(
      /a run from it continues that adapter, so LoRA rank 8 .* does not apply.*--from llama-8b/,
    );
  });

  it('an adapter that cannot be continued: a fresh adapter, and the summary says why', () => {
    const broken = decideTrainingSource(adapter({ dir: '/adapters/sweet-1', error: 'missing tensors: no lora_A' }), {
      lora: LORA,
      loraExplicit: false,
    });
    expect(broken).toMatchObject({ ok: true, lora: LORA });
    expect(broken.ok && broken.continueAdapter).toBeFalsy();
    expect(broken.ok && broken.summary).toMatch(
      /a fresh adapter.*the adapter of "sweet-1" cannot be continued \(missing tensors: no lora_A\)/,
    );
    const foreign = decideTrainingSource(
      adapter({ dir: '/x', rank: 8, alpha: 16, targetModules: ['q_proj', 'lm_head'] }),
      { lora: LORA, loraExplicit: false },
    );
    expect(foreign.ok && foreign.summary).toMatch(/targets lm_head, which this trainer cannot train/);
  });
});

describe('chooseStart: versions trained on erased data', () => {
  const v = (name: string, erased = false, status = 'retired') => ({ name, status, erased });

  it('a clean lineage starts from the version asked for', () => {
    expect(chooseStart([v('c'), v('b'), v('a')], 'ancestor')).toEqual({ index: 0 });
    expect(chooseStart([], 'ancestor')).toMatchObject({
      reason: expect.stringMatching(/no policy version is deployed/),
    });
  });

  it('the service starts from the nearest version before the oldest marked one, and says why', () => {
    // c descends from b, which was trained on erased data: both carry it; a is clean.
    const r = chooseStart([v('c'), v('b', true), v('a')], 'ancestor');
    expect(r).toEqual({
      index: 2,
      note: '"c" descends from "b", which was trained on sessions since erased (/privacy delete marked it): training from "a", the nearest version before it, instead',
    });
    expect(chooseStart([v('c', true), v('b'), v('a', true), v('root')], 'ancestor')).toMatchObject({ index: 3 });
  });

  it('a person naming a marked version is refused, with the clean ancestor named', () => {
    const r = chooseStart([v('c', true), v('b')], 'refuse');
    expect(r).toMatchObject({
      reason: expect.stringMatching(
        /^"c" was trained on sessions since erased.*Start from "b".*sweetloop train --from b/,
      ),
    });
  });

  it('no clean ancestor, or a removed one: cannot train', () => {
    expect(chooseStart([v('c', true)], 'ancestor')).toMatchObject({
      reason: expect.stringMatching(/no version before it is free of them/),
    });
    expect(chooseStart([v('c', true), v('b', false, 'removed')], 'ancestor')).toMatchObject({
      reason: expect.stringMatching(/"b", was removed/),
    });
  });

  it('a note from chooseStart reaches the decision, and a failure after it keeps it', () => {
    const r = decideTrainingSource(endpoint(null), { lora: LORA, loraExplicit: false, note: 'N' });
    expect(!r.ok && r.reason).toMatch(/^N, but "llama-8b" is served by/);
  });
});
