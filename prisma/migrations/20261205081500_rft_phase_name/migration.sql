-- The training phase of rejection fine-tuning was called "sft", it is "rft" now, like its algorithm
-- (trainer/rft.ts, RFT_PHASE). A run resumes from TrainingRun.progress, so renaming the phase there lets an rft
-- run stopped before this migration resume from its last checkpoint.
-- (No semicolons or quotes in these comments: the engine applies the script statement by statement.)
UPDATE "TrainingStep" SET "phase" = 'rft' WHERE "phase" = 'sft';

UPDATE "TrainingRun"
SET "progress" = jsonb_set("progress", '{current,phase}', '"rft"')
WHERE "algorithm" = 'rft' AND "progress" #>> '{current,phase}' = 'sft';

UPDATE "TrainingRun"
SET "progress" = jsonb_set("progress", '{done}', (
  SELECT jsonb_agg(CASE WHEN d = '"sft"'::jsonb THEN '"rft"'::jsonb ELSE d END ORDER BY i)
  FROM jsonb_array_elements("progress" -> 'done') WITH ORDINALITY AS e(d, i)
))
WHERE "algorithm" = 'rft' AND "progress" -> 'done' @> '["sft"]'::jsonb;

-- Metrics are keyed by phase: those of the run, and those its published version keeps under training.
UPDATE "TrainingRun"
SET "metrics" = ("metrics" - 'sft') || jsonb_build_object('rft', "metrics" -> 'sft')
WHERE "algorithm" = 'rft' AND "metrics" ? 'sft';

UPDATE "PolicyVersion"
SET "metrics" = jsonb_set("metrics", '{training}', (("metrics" -> 'training') - 'sft') || jsonb_build_object('rft', "metrics" -> 'training' -> 'sft'))
WHERE "algorithm" = 'rft' AND "metrics" -> 'training' ? 'sft';
