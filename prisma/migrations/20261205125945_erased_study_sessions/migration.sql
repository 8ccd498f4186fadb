-- What a study owes a person who deleted their data (prisma/privacy-store.ts writes it, bot/study-payouts.ts reads it).
-- (No semicolons or quotes in these comments: the engine applies the script statement by statement.)
-- CreateTable
CREATE TABLE "ErasedStudySession" (
    "id" UUID NOT NULL,
    "studyId" UUID NOT NULL,
    "participantKey" TEXT NOT NULL,
    "success" BOOLEAN NOT NULL,
    "activeMs" INTEGER NOT NULL,
    "erasedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ErasedStudySession_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ErasedStudySession_studyId_participantKey_idx" ON "ErasedStudySession"("studyId", "participantKey");

-- AddForeignKey
ALTER TABLE "ErasedStudySession" ADD CONSTRAINT "ErasedStudySession_studyId_fkey" FOREIGN KEY ("studyId") REFERENCES "Study"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
