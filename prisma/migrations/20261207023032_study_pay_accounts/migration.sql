-- AlterTable
ALTER TABLE "Study" ADD COLUMN     "completionCode" TEXT,
ADD COLUMN     "participantIdPlatform" TEXT;

-- CreateTable
CREATE TABLE "PayAccount" (
    "participantId" UUID NOT NULL,
    "platform" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PayAccount_pkey" PRIMARY KEY ("participantId","platform")
);

-- AddForeignKey
ALTER TABLE "PayAccount" ADD CONSTRAINT "PayAccount_participantId_fkey" FOREIGN KEY ("participantId") REFERENCES "Participant"("id") ON DELETE CASCADE ON UPDATE CASCADE;
