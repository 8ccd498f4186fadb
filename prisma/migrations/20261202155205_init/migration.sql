-- CreateEnum
CREATE TYPE "ParticipantRole" AS ENUM ('participant', 'moderator', 'researcher', 'simulated');

-- CreateEnum
CREATE TYPE "TaskKind" AS ENUM ('backend', 'frontend');

-- CreateEnum
CREATE TYPE "TaskSource" AS ENUM ('colbench', 'builtin', 'generated');

-- CreateEnum
CREATE TYPE "TaskSplit" AS ENUM ('train', 'test');

-- CreateEnum
CREATE TYPE "SessionStatus" AS ENUM ('active', 'answered', 'abandoned', 'expired');

-- CreateEnum
CREATE TYPE "TurnRole" AS ENUM ('agent', 'human', 'system');

-- CreateEnum
CREATE TYPE "PolicyStatus" AS ENUM ('candidate', 'deployed', 'retired');

-- CreateEnum
CREATE TYPE "TrainingStatus" AS ENUM ('queued', 'running', 'succeeded', 'failed', 'cancelled');

-- CreateTable
CREATE TABLE "Participant" (
    "id" UUID NOT NULL,
    "discordUserId" TEXT NOT NULL,
    "displayName" TEXT,
    "role" "ParticipantRole" NOT NULL DEFAULT 'participant',
    "consentGivenAt" TIMESTAMP(3),
    "consentWithdrawnAt" TIMESTAMP(3),
    "deletedAt" TIMESTAMP(3),
    "banned" BOOLEAN NOT NULL DEFAULT false,
    "bannedAt" TIMESTAMP(3),
    "bannedReason" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Participant_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Task" (
    "id" UUID NOT NULL,
    "kind" "TaskKind" NOT NULL,
    "source" "TaskSource" NOT NULL,
    "externalId" TEXT,
    "contentHash" TEXT NOT NULL,
    "description" TEXT NOT NULL,
    "hiddenReference" TEXT NOT NULL,
    "testCases" JSONB,
    "split" "TaskSplit" NOT NULL DEFAULT 'train',
    "meta" JSONB,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Task_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Session" (
    "id" UUID NOT NULL,
    "taskId" UUID NOT NULL,
    "participantId" UUID NOT NULL,
    "policyVersionId" UUID,
    "channel" TEXT NOT NULL,
    "simulated" BOOLEAN NOT NULL DEFAULT false,
    "guildId" TEXT,
    "channelId" TEXT,
    "threadId" TEXT,
    "status" "SessionStatus" NOT NULL DEFAULT 'active',
    "turnCount" INTEGER NOT NULL DEFAULT 0,
    "answer" TEXT,
    "reward" DOUBLE PRECISION,
    "startedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastActivityAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "endedAt" TIMESTAMP(3),
    "endReason" TEXT,

    CONSTRAINT "Session_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Turn" (
    "id" UUID NOT NULL,
    "sessionId" UUID NOT NULL,
    "index" INTEGER NOT NULL,
    "role" "TurnRole" NOT NULL,
    "content" TEXT NOT NULL,
    "rawOutput" TEXT,
    "promptTokens" INTEGER,
    "completionTokens" INTEGER,
    "latencyMs" INTEGER,
    "externalMessageId" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Turn_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Evaluation" (
    "id" UUID NOT NULL,
    "sessionId" UUID NOT NULL,
    "score" DOUBLE PRECISION NOT NULL,
    "success" BOOLEAN NOT NULL,
    "testsPassed" INTEGER,
    "testsTotal" INTEGER,
    "detail" JSONB NOT NULL,
    "metric" TEXT,
    "evaluatorVersion" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Evaluation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Rating" (
    "id" UUID NOT NULL,
    "sessionId" UUID NOT NULL,
    "raterId" UUID NOT NULL,
    "value" INTEGER NOT NULL,
    "comment" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Rating_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PolicyVersion" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "parentId" UUID,
    "algorithm" TEXT NOT NULL,
    "checkpointPath" TEXT NOT NULL,
    "checkpointSha256" TEXT NOT NULL,
    "metrics" JSONB,
    "status" "PolicyStatus" NOT NULL DEFAULT 'candidate',
    "trainingRunId" UUID,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deployedAt" TIMESTAMP(3),
    "retiredAt" TIMESTAMP(3),

    CONSTRAINT "PolicyVersion_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TrainingRun" (
    "id" UUID NOT NULL,
    "algorithm" TEXT NOT NULL,
    "config" JSONB NOT NULL,
    "dataSnapshot" JSONB,
    "status" "TrainingStatus" NOT NULL DEFAULT 'queued',
    "progress" JSONB,
    "metrics" JSONB,
    "log" TEXT NOT NULL DEFAULT '',
    "error" TEXT,
    "checkpointDir" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "startedAt" TIMESTAMP(3),
    "finishedAt" TIMESTAMP(3),
    "heartbeatAt" TIMESTAMP(3),

    CONSTRAINT "TrainingRun_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TrainingStep" (
    "id" UUID NOT NULL,
    "runId" UUID NOT NULL,
    "phase" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "metrics" JSONB NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TrainingStep_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ModerationFlag" (
    "id" UUID NOT NULL,
    "sessionId" UUID NOT NULL,
    "flaggedById" UUID,
    "reason" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "resolvedAt" TIMESTAMP(3),

    CONSTRAINT "ModerationFlag_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AuditLog" (
    "id" UUID NOT NULL,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "target" TEXT,
    "detail" JSONB,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "AuditLog_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ProcessedEvent" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ProcessedEvent_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Setting" (
    "key" TEXT NOT NULL,
    "value" JSONB NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Setting_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE UNIQUE INDEX "Participant_discordUserId_key" ON "Participant"("discordUserId");

-- CreateIndex
CREATE INDEX "Participant_role_idx" ON "Participant"("role");

-- CreateIndex
CREATE UNIQUE INDEX "Task_contentHash_key" ON "Task"("contentHash");

-- CreateIndex
CREATE INDEX "Task_kind_split_idx" ON "Task"("kind", "split");

-- CreateIndex
CREATE INDEX "Task_source_externalId_idx" ON "Task"("source", "externalId");

-- CreateIndex
CREATE UNIQUE INDEX "Session_threadId_key" ON "Session"("threadId");

-- CreateIndex
CREATE INDEX "Session_participantId_status_idx" ON "Session"("participantId", "status");

-- CreateIndex
CREATE INDEX "Session_status_lastActivityAt_idx" ON "Session"("status", "lastActivityAt");

-- CreateIndex
CREATE INDEX "Session_taskId_status_idx" ON "Session"("taskId", "status");

-- CreateIndex
CREATE INDEX "Session_policyVersionId_status_idx" ON "Session"("policyVersionId", "status");

-- CreateIndex
CREATE INDEX "Session_startedAt_idx" ON "Session"("startedAt");

-- CreateIndex
CREATE UNIQUE INDEX "Turn_externalMessageId_key" ON "Turn"("externalMessageId");

-- CreateIndex
CREATE UNIQUE INDEX "Turn_sessionId_index_key" ON "Turn"("sessionId", "index");

-- CreateIndex
CREATE UNIQUE INDEX "Evaluation_sessionId_key" ON "Evaluation"("sessionId");

-- CreateIndex
CREATE UNIQUE INDEX "Rating_sessionId_raterId_key" ON "Rating"("sessionId", "raterId");

-- CreateIndex
CREATE UNIQUE INDEX "PolicyVersion_name_key" ON "PolicyVersion"("name");

-- CreateIndex
CREATE INDEX "PolicyVersion_status_deployedAt_idx" ON "PolicyVersion"("status", "deployedAt");

-- CreateIndex
CREATE INDEX "TrainingRun_status_idx" ON "TrainingRun"("status");

-- CreateIndex
CREATE UNIQUE INDEX "TrainingStep_runId_phase_step_key" ON "TrainingStep"("runId", "phase", "step");

-- CreateIndex
CREATE INDEX "ModerationFlag_sessionId_idx" ON "ModerationFlag"("sessionId");

-- CreateIndex
CREATE INDEX "AuditLog_action_createdAt_idx" ON "AuditLog"("action", "createdAt");

-- CreateIndex
CREATE INDEX "ProcessedEvent_createdAt_idx" ON "ProcessedEvent"("createdAt");

-- AddForeignKey
ALTER TABLE "Session" ADD CONSTRAINT "Session_taskId_fkey" FOREIGN KEY ("taskId") REFERENCES "Task"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Session" ADD CONSTRAINT "Session_participantId_fkey" FOREIGN KEY ("participantId") REFERENCES "Participant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Session" ADD CONSTRAINT "Session_policyVersionId_fkey" FOREIGN KEY ("policyVersionId") REFERENCES "PolicyVersion"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Turn" ADD CONSTRAINT "Turn_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "Session"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Evaluation" ADD CONSTRAINT "Evaluation_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "Session"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Rating" ADD CONSTRAINT "Rating_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "Session"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Rating" ADD CONSTRAINT "Rating_raterId_fkey" FOREIGN KEY ("raterId") REFERENCES "Participant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PolicyVersion" ADD CONSTRAINT "PolicyVersion_parentId_fkey" FOREIGN KEY ("parentId") REFERENCES "PolicyVersion"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PolicyVersion" ADD CONSTRAINT "PolicyVersion_trainingRunId_fkey" FOREIGN KEY ("trainingRunId") REFERENCES "TrainingRun"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TrainingStep" ADD CONSTRAINT "TrainingStep_runId_fkey" FOREIGN KEY ("runId") REFERENCES "TrainingRun"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ModerationFlag" ADD CONSTRAINT "ModerationFlag_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "Session"("id") ON DELETE CASCADE ON UPDATE CASCADE;
