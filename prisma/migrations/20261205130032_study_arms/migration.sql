-- A/B experiments become periods of a study (prisma/experiment-store.ts): the study arms assign every session
-- (bot/assign.ts) and the Experiment row records the period. Experiments stored before ran over the sessions
-- the bot collected where no study was open, so they belong to the default study, created here when missing
-- with the values prisma/study-store.ts gives it. Their share becomes a whole percent. A running experiment
-- becomes the arms of the default study (control and candidate in their shares), so it keeps assigning after
-- the upgrade. Session.arm goes: the version that played a session of a period is its arm.
-- (No semicolons or quotes in these comments: the engine applies the script statement by statement.)

INSERT INTO "Study" ("id", "name", "seed", "createdBy", "updatedAt")
SELECT gen_random_uuid(), 'default', 0, 'bot', CURRENT_TIMESTAMP
WHERE EXISTS (SELECT 1 FROM "Experiment") AND NOT EXISTS (SELECT 1 FROM "Study" WHERE "name" = 'default');

-- AlterTable
ALTER TABLE "Experiment" ADD COLUMN "studyId" UUID;

UPDATE "Experiment" SET "studyId" = (SELECT "id" FROM "Study" WHERE "name" = 'default');

ALTER TABLE "Experiment" ALTER COLUMN "studyId" SET NOT NULL;

ALTER TABLE "Experiment" ALTER COLUMN "share" SET DATA TYPE INTEGER USING GREATEST(1, LEAST(99, round("share" * 100)))::integer;

-- The running experiment (at most one ran at a time) as the default study arms.
INSERT INTO "StudyArm" ("id", "studyId", "policyVersionId", "share")
SELECT gen_random_uuid(), e."studyId", arm."policyVersionId", arm."share"
FROM "Experiment" e
CROSS JOIN LATERAL (VALUES (e."controlId", 100 - e."share"), (e."candidateId", e."share")) AS arm("policyVersionId", "share")
WHERE e."status" = 'running'
  AND e."id" = (SELECT "id" FROM "Experiment" WHERE "status" = 'running' ORDER BY "startedAt" DESC LIMIT 1)
  AND NOT EXISTS (SELECT 1 FROM "StudyArm" a WHERE a."studyId" = e."studyId");

-- DropIndex
DROP INDEX "Experiment_status_idx";

-- DropIndex
DROP INDEX "Session_experimentId_arm_idx";

-- AlterTable
ALTER TABLE "Experiment" DROP COLUMN "seed";

-- AlterTable
ALTER TABLE "Session" DROP COLUMN "arm";

-- CreateIndex
CREATE INDEX "Experiment_studyId_status_idx" ON "Experiment"("studyId", "status");

-- CreateIndex
CREATE INDEX "Session_experimentId_idx" ON "Session"("experimentId");

-- AddForeignKey
ALTER TABLE "Experiment" ADD CONSTRAINT "Experiment_studyId_fkey" FOREIGN KEY ("studyId") REFERENCES "Study"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
