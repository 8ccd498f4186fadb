// Which projection matrices of the Llama-style decoder a LoRA adapter can target (PEFT's target_modules names),
// apart from lora.ts so that settings and presets can name them without loading TensorFlow.js.

/** The projection matrices a LoRA adapter can target. */
export const LINEAR_MODULES = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type LinearModule = (typeof LINEAR_MODULES)[number];

/** The default targets: the attention projections. */
export const DEFAULT_LORA_TARGETS: readonly LinearModule[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj'];

export function isLinearModule(name: string): name is LinearModule {
  return (LINEAR_MODULES as readonly string[]).includes(name);
}
