// The trainer service's pure parts (trainer/service.ts): the back-off after failing cycles and the readiness.
import { describe, expect, it } from 'vitest';
import { backoffSeconds, ServiceStatus } from '../../trainer/service.ts';
import { loraRequest, PRESETS, trainConfig } from '../../trainer/presets.ts';

describe('backoffSeconds', () => {
  it('waits the poll interval while nothing fails, then doubles with each failure in a row up to the cap', () => {
    expect(backoffSeconds(0, 60, 3600)).toBe(60);
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffSeconds(n, 60, 3600))).toEqual([
      120, 240, 480, 960, 1920, 3600, 3600,
    ]);
    expect(backoffSeconds(10_000, 60, 3600)).toBe(3600);
    // A cap below the poll interval never makes it poll faster than configured.
    expect(backoffSeconds(3, 60, 10)).toBe(60);
  });
});

describe('ServiceStatus.readiness', () => {
  it('is ready only after a look that found something to train and no failing cycle', () => {
    const s = new ServiceStatus();
    expect(s.readiness()).toMatchObject({ ok: false, reason: expect.stringMatching(/^starting/) });
    s.state = 'waiting';
    expect(s.readiness()).toEqual({ ok: true });
    Object.assign(s, { state: 'cannot-train', reason: 'no base' });
    expect(s.readiness()).toEqual({ ok: false, reason: 'cannot train: no base' });
    Object.assign(s, { state: 'backing-off', reason: 'disk full', failures: 3 });
    expect(s.readiness()).toEqual({ ok: false, reason: '3 failed cycle(s) in a row, the last: disk full' });
  });
});

describe('train --lora flags (trainer/presets.ts loraRequest)', () => {
  it('alpha defaults to 2 x rank, targets to q/k/v/o; flags override; a preset with LoRA gives its own', () => {
    expect(loraRequest(null, {})).toEqual({ spec: null, explicit: false });
    expect(loraRequest(null, { lora: 4 })).toEqual({
      spec: { rank: 4, alpha: 8, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] },
      explicit: true,
    });
    expect(loraRequest(null, { lora: 4, loraAlpha: 1, loraTargets: ['gate_proj', 'down_proj'] }).spec).toEqual({
      rank: 4,
      alpha: 1,
      targetModules: ['gate_proj', 'down_proj'],
    });
    expect(loraRequest(PRESETS['paper-lora'].lora, {})).toEqual({
      spec: { rank: 16, alpha: 32, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] },
      explicit: false,
    });
    expect(() => loraRequest(null, { loraAlpha: 3 })).toThrow(/need --lora RANK/);
    expect(() => loraRequest(null, { lora: 4, loraTargets: ['lm_head'] })).toThrow(
      /unknown LoRA target module\(s\) lm_head/,
    );
  });

  it('paper-lora keeps the paper recipe with adapter rates; the LoRA settings pass the schema', () => {
    const c = trainConfig('paper-lora', { lora: { rank: 2, alpha: 3, targetModules: ['up_proj'] } });
    expect(c).toMatchObject({
      lr: 5e-6,
      criticLr: 5e-6,
      beta: PRESETS.paper.beta,
      candidates: 16,
      lora: { rank: 2, alpha: 3, targetModules: ['up_proj'] },
    });
    expect(() => trainConfig('paper', { lora: { rank: 2, alpha: 3, targetModules: ['lm_head' as 'q_proj'] } })).toThrow(
      /lora\.targetModules/,
    );
  });
});

describe('train --lr --critic-lr --epochs --critic-epochs (trainer/commands.ts trainOverrides)', () => {
  it("reach the run's configuration over the preset; left out, the preset stands", async () => {
    const { trainOverrides } = await import('../../trainer/commands.ts');
    const c = trainConfig(
      'paper-lora',
      trainOverrides({ seed: 9 }, { lr: 1e-4, criticLr: 2e-5, epochs: 3, criticEpochs: 2 }),
    );
    expect(c).toMatchObject({ seed: 9, lr: 1e-4, criticLr: 2e-5, actorEpochs: 3, sftEpochs: 3, criticEpochs: 2 });
    expect(trainConfig('paper-lora', trainOverrides({ seed: 9 }, {}))).toMatchObject({
      lr: 5e-6,
      criticLr: 5e-6,
      actorEpochs: 1,
      criticEpochs: 4,
    });
  });
});
