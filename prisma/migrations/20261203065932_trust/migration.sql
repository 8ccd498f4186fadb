-- AlterEnum
ALTER TYPE "ParticipantRole" ADD VALUE 'operator';

-- AlterTable
ALTER TABLE "AuditLog" ADD COLUMN     "guildId" TEXT;

-- AlterTable
ALTER TABLE "ModerationFlag" ADD COLUMN     "resolvedBy" TEXT,
ADD COLUMN     "resolvedReason" TEXT;

-- AlterTable
ALTER TABLE "Participant" ADD COLUMN     "bannedGuildIds" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- AlterTable
ALTER TABLE "Session" ADD COLUMN     "ratingAskedAt" TIMESTAMP(3),
ADD COLUMN     "resultShownAt" TIMESTAMP(3);

-- CreateIndex
CREATE INDEX "ModerationFlag_resolvedAt_idx" ON "ModerationFlag"("resolvedAt");

-- Sessions answered before this migration had their result and rating prompt shown already: a restart must
-- not show them again.
UPDATE "Session" SET "resultShownAt" = "endedAt", "ratingAskedAt" = "endedAt" WHERE "status" = 'answered';
