-- CreateEnum
CREATE TYPE "ExperimentStatus" AS ENUM ('running', 'stopped');

-- AlterTable
ALTER TABLE "Session" ADD COLUMN     "arm" TEXT,
ADD COLUMN     "experimentId" UUID,
ADD COLUMN     "goldSourceId" UUID;

-- CreateTable
CREATE TABLE "Experiment" (
    "id" UUID NOT NULL,
    "candidateId" UUID NOT NULL,
    "controlId" UUID NOT NULL,
    "share" DOUBLE PRECISION NOT NULL,
    "seed" INTEGER NOT NULL,
    "status" "ExperimentStatus" NOT NULL DEFAULT 'running',
    "outcome" TEXT,
    "startedBy" TEXT NOT NULL,
    "stoppedBy" TEXT,
    "startedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "stoppedAt" TIMESTAMP(3),

    CONSTRAINT "Experiment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SessionQuality" (
    "sessionId" UUID NOT NULL,
    "score" DOUBLE PRECISION NOT NULL,
    "signals" JSONB NOT NULL,
    "computedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SessionQuality_pkey" PRIMARY KEY ("sessionId")
);

-- CreateTable
CREATE TABLE "ParticipantQuality" (
    "participantId" UUID NOT NULL,
    "score" DOUBLE PRECISION NOT NULL,
    "sessions" INTEGER NOT NULL,
    "signals" JSONB NOT NULL,
    "computedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ParticipantQuality_pkey" PRIMARY KEY ("participantId")
);

-- CreateTable
CREATE TABLE "TrainingExclusion" (
    "participantId" UUID NOT NULL,
    "excludedBy" TEXT NOT NULL,
    "reason" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TrainingExclusion_pkey" PRIMARY KEY ("participantId")
);

-- CreateTable
CREATE TABLE "Preference" (
    "id" UUID NOT NULL,
    "raterId" UUID NOT NULL,
    "sessionAId" UUID NOT NULL,
    "sessionBId" UUID NOT NULL,
    "choice" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "answeredAt" TIMESTAMP(3),

    CONSTRAINT "Preference_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Experiment_status_idx" ON "Experiment"("status");

-- CreateIndex
CREATE INDEX "Preference_sessionAId_idx" ON "Preference"("sessionAId");

-- CreateIndex
CREATE INDEX "Preference_sessionBId_idx" ON "Preference"("sessionBId");

-- CreateIndex
CREATE UNIQUE INDEX "Preference_raterId_sessionAId_sessionBId_key" ON "Preference"("raterId", "sessionAId", "sessionBId");

-- CreateIndex
CREATE INDEX "Session_experimentId_arm_idx" ON "Session"("experimentId", "arm");

-- AddForeignKey
ALTER TABLE "Session" ADD CONSTRAINT "Session_experimentId_fkey" FOREIGN KEY ("experimentId") REFERENCES "Experiment"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Experiment" ADD CONSTRAINT "Experiment_candidateId_fkey" FOREIGN KEY ("candidateId") REFERENCES "PolicyVersion"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Experiment" ADD CONSTRAINT "Experiment_controlId_fkey" FOREIGN KEY ("controlId") REFERENCES "PolicyVersion"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SessionQuality" ADD CONSTRAINT "SessionQuality_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "Session"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ParticipantQuality" ADD CONSTRAINT "ParticipantQuality_participantId_fkey" FOREIGN KEY ("participantId") REFERENCES "Participant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TrainingExclusion" ADD CONSTRAINT "TrainingExclusion_participantId_fkey" FOREIGN KEY ("participantId") REFERENCES "Participant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Preference" ADD CONSTRAINT "Preference_raterId_fkey" FOREIGN KEY ("raterId") REFERENCES "Participant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Preference" ADD CONSTRAINT "Preference_sessionAId_fkey" FOREIGN KEY ("sessionAId") REFERENCES "Session"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Preference" ADD CONSTRAINT "Preference_sessionBId_fkey" FOREIGN KEY ("sessionBId") REFERENCES "Session"("id") ON DELETE CASCADE ON UPDATE CASCADE;
