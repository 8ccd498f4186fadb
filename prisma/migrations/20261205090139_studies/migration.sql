-- Studies (prisma/study-store.ts, bot/assign.ts): a task pool with k sessions a task, arms, versioned consent.
-- (No semicolons or quotes in these comments: the engine applies the script statement by statement.)

-- CreateEnum
CREATE TYPE "StudyStatus" AS ENUM ('open', 'paused', 'closed');

-- AlterTable
ALTER TABLE "Session" ADD COLUMN     "studyId" UUID;

-- CreateTable
CREATE TABLE "Study" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "kind" "TaskKind",
    "split" "TaskSplit" NOT NULL DEFAULT 'train',
    "perTask" INTEGER,
    "seed" INTEGER NOT NULL,
    "status" "StudyStatus" NOT NULL DEFAULT 'open',
    "consentText" TEXT,
    "consentVersion" INTEGER NOT NULL DEFAULT 0,
    "consentSha256" TEXT,
    "payPerSessionCents" INTEGER,
    "bonusSuccessCents" INTEGER,
    "currency" TEXT,
    "maxSessionsPerPerson" INTEGER,
    "opensAt" TIMESTAMP(3),
    "closesAt" TIMESTAMP(3),
    "guildIds" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "channelIds" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "createdBy" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Study_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "StudyTask" (
    "studyId" UUID NOT NULL,
    "taskId" UUID NOT NULL,
    "position" INTEGER NOT NULL,

    CONSTRAINT "StudyTask_pkey" PRIMARY KEY ("studyId","taskId")
);

-- CreateTable
CREATE TABLE "StudyArm" (
    "id" UUID NOT NULL,
    "studyId" UUID NOT NULL,
    "policyVersionId" UUID NOT NULL,
    "share" INTEGER NOT NULL,

    CONSTRAINT "StudyArm_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ConsentAcceptance" (
    "id" UUID NOT NULL,
    "participantId" UUID NOT NULL,
    "studyId" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "sha256" TEXT NOT NULL,
    "acceptedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ConsentAcceptance_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "Study_name_key" ON "Study"("name");

-- CreateIndex
CREATE INDEX "Study_status_createdAt_idx" ON "Study"("status", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "StudyTask_studyId_position_key" ON "StudyTask"("studyId", "position");

-- CreateIndex
CREATE UNIQUE INDEX "StudyArm_studyId_policyVersionId_key" ON "StudyArm"("studyId", "policyVersionId");

-- CreateIndex
CREATE UNIQUE INDEX "ConsentAcceptance_participantId_studyId_version_key" ON "ConsentAcceptance"("participantId", "studyId", "version");

-- CreateIndex
CREATE INDEX "Session_studyId_taskId_status_idx" ON "Session"("studyId", "taskId", "status");

-- AddForeignKey
ALTER TABLE "Session" ADD CONSTRAINT "Session_studyId_fkey" FOREIGN KEY ("studyId") REFERENCES "Study"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "StudyTask" ADD CONSTRAINT "StudyTask_studyId_fkey" FOREIGN KEY ("studyId") REFERENCES "Study"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "StudyTask" ADD CONSTRAINT "StudyTask_taskId_fkey" FOREIGN KEY ("taskId") REFERENCES "Task"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "StudyArm" ADD CONSTRAINT "StudyArm_studyId_fkey" FOREIGN KEY ("studyId") REFERENCES "Study"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "StudyArm" ADD CONSTRAINT "StudyArm_policyVersionId_fkey" FOREIGN KEY ("policyVersionId") REFERENCES "PolicyVersion"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ConsentAcceptance" ADD CONSTRAINT "ConsentAcceptance_participantId_fkey" FOREIGN KEY ("participantId") REFERENCES "Participant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ConsentAcceptance" ADD CONSTRAINT "ConsentAcceptance_studyId_fkey" FOREIGN KEY ("studyId") REFERENCES "Study"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The default study is where the bot collects when no other study is open. Sessions of people stored before
-- studies existed were collected that way: they join it, so its balance continues where it stood. Its pool
-- follows the stored tasks and is filled on first use.
INSERT INTO "Study" ("id", "name", "seed", "createdBy", "updatedAt")
VALUES (gen_random_uuid(), 'default', 0, 'migration', CURRENT_TIMESTAMP)
ON CONFLICT ("name") DO NOTHING;

UPDATE "Session" s
SET "studyId" = d."id"
FROM "Study" d, "Participant" p
WHERE d."name" = 'default' AND p."id" = s."participantId" AND p."role" <> 'simulated' AND s."studyId" IS NULL;
