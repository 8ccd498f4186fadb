-- CreateTable
CREATE TABLE "StudyCalibration" (
    "id" UUID NOT NULL,
    "studyId" UUID NOT NULL,
    "simulator" TEXT NOT NULL,
    "result" JSONB NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "StudyCalibration_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "StudyCalibration_studyId_createdAt_idx" ON "StudyCalibration"("studyId", "createdAt");

-- AddForeignKey
ALTER TABLE "StudyCalibration" ADD CONSTRAINT "StudyCalibration_studyId_fkey" FOREIGN KEY ("studyId") REFERENCES "Study"("id") ON DELETE CASCADE ON UPDATE CASCADE;
