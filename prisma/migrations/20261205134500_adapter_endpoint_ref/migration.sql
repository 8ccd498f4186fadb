-- `sweetloop policy remove` takes a version out of service without deleting the row sessions and runs name.
ALTER TYPE "PolicyStatus" ADD VALUE 'removed';

-- Adapter versions used to carry a copy of their endpoint version's serving settings (URL, model, key variable,
-- window, sampling, base directory), and trainer/policies/serving.ts now reads those from the endpoint version, so
-- that moving the server is one update. Keep only the reference and the adapter's own name on the server.
-- Adapters on a checkpoint version (served by `sweetloop serve`, trainer/serve/follow.ts) are left as they are.
UPDATE "PolicyVersion" AS a
SET "serving" = jsonb_build_object('endpointVersionId', a."serving" -> 'endpointVersionId', 'adapterName', a."serving" -> 'adapterName')
FROM "PolicyVersion" AS e
WHERE a."kind" = 'adapter'
  AND jsonb_typeof(a."serving") = 'object'
  AND e."id"::text = a."serving" ->> 'endpointVersionId'
  AND e."kind" = 'endpoint';
