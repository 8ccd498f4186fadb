// The starter policy: what `sweetloop` serves when no POLICY_MODEL_DIR is configured. A small Llama-style model
// (about 1M parameters) trained from scratch, by supervised next-token prediction on the agent's turns only, on
// dialogues that the scripted expert agent plays against the rule-based collaborator on ColBench-mini tasks.
// It learns the game's shape (ask, then answer with the marker), each task family's function and name, and to
// copy some of the values it was told into its answer (bench/HISTORY.md, "Copying"): it is the starting point
// that human sessions and SWEET-RL improve, and a real model is one environment variable away.
//
// Recipe (version 4: ColBench-mini has one function name a template; version 3 played three): first copy
// drills alone until copying appears (a model this small shows none for ~1,500 updates), then many short expert
// games (fresh data for every update rather than epochs over a few), half on varied tasks where remembered
// values are wrong, with drills mixed in so that the copying is kept; answers without the constants' explanatory
// comments, small batches (1-2 dialogues) and many updates, and the system prompt, which every dialogue shares
// token for token, run once per update as a KV-cache prefix.
//
// Deterministic from the seed: the tasks, the games, the tokenizer, the initial weights and the batch order all
// derive from it, and tfjs' wasm and cpu kernels are single-threaded, so the same seed on the same backend
// writes the same files.
//
// The standard recipe's build from the default seed is shipped in the repository (starter-checkpoint/seed-N,
// see its README.md): a first `npm start` installs that copy in milliseconds instead of training for about 20
// minutes.
// It is used only when its manifest names exactly the recipe asked for, and every file still has its recorded
// sha256 (starter-install.ts); otherwise the starter is trained.
//
// The recipe is split by job: starter-recipe.ts (settings, defaults, options), starter-data.ts (the games and
// drills), starter-batches.ts (examples, batches, the loss), starter-build.ts (the training), starter-install.ts
// (reuse, the shipped copy). This module is the entry the rest of the project imports.
export * from './starter-recipe.ts';
export * from './starter-data.ts';
export { batchLoss, sharedPrefixLength, type Example } from './starter-batches.ts';
export { buildStarterPolicy } from './starter-build.ts';
export * from './starter-install.ts';
