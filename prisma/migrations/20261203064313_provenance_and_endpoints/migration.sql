-- AlterTable
ALTER TABLE "PolicyVersion" ADD COLUMN     "kind" TEXT NOT NULL DEFAULT 'checkpoint',
ADD COLUMN     "serving" JSONB,
ALTER COLUMN "checkpointPath" DROP NOT NULL,
ALTER COLUMN "checkpointSha256" DROP NOT NULL;

-- AlterTable
ALTER TABLE "Turn" ADD COLUMN     "provenance" JSONB;

-- Session.turnCount counts agent messages only (it counted every turn on the bot's path).
UPDATE "Session" s SET "turnCount" = (SELECT count(*) FROM "Turn" t WHERE t."sessionId" = s.id AND t.role = 'agent');
UPDATE "Session" SET "endReason" = 'answered' WHERE "endReason" = 'answer';
