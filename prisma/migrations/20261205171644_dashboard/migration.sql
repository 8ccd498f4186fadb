-- CreateTable
CREATE TABLE "CriticAdvantage" (
    "id" UUID NOT NULL,
    "trainingRunId" UUID NOT NULL,
    "turnId" UUID NOT NULL,
    "advantage" DOUBLE PRECISION NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "CriticAdvantage_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "DashboardToken" (
    "id" UUID NOT NULL,
    "role" TEXT NOT NULL,
    "guildId" TEXT,
    "tokenSha256" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "createdBy" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revokedAt" TIMESTAMP(3),

    CONSTRAINT "DashboardToken_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "CriticAdvantage_turnId_idx" ON "CriticAdvantage"("turnId");

-- CreateIndex
CREATE UNIQUE INDEX "CriticAdvantage_trainingRunId_turnId_key" ON "CriticAdvantage"("trainingRunId", "turnId");

-- CreateIndex
CREATE UNIQUE INDEX "DashboardToken_tokenSha256_key" ON "DashboardToken"("tokenSha256");

-- AddForeignKey
ALTER TABLE "CriticAdvantage" ADD CONSTRAINT "CriticAdvantage_trainingRunId_fkey" FOREIGN KEY ("trainingRunId") REFERENCES "TrainingRun"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "CriticAdvantage" ADD CONSTRAINT "CriticAdvantage_turnId_fkey" FOREIGN KEY ("turnId") REFERENCES "Turn"("id") ON DELETE CASCADE ON UPDATE CASCADE;
