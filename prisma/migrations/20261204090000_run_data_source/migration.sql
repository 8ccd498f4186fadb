-- Training runs stored before the data filter named their data with "includeSimulated" (true: people and
-- simulators, false: people only), which trainer/runs.ts no longer reads. Give each such run the filter it
-- trained with (every usable session of that source, no thresholds, seeded by the run's seed) so that it
-- still resumes and reports its source, and drop the old key.
UPDATE "TrainingRun"
SET "config" = jsonb_set(
    "config" - 'includeSimulated',
    '{data}',
    COALESCE(
        "config" -> 'data',
        jsonb_build_object(
            'source', CASE WHEN "config" ->> 'includeSimulated' = 'true' THEN 'both' ELSE 'human' END,
            'simulatedWeight', 1,
            'seed', COALESCE("config" -> 'train' -> 'seed', '0'::jsonb)
        )
    )
)
WHERE "config" -> 'includeSimulated' IS NOT NULL;
