-- CreateTable
CREATE TABLE "TurnTokens" (
    "turnId" UUID NOT NULL,
    "ids" INTEGER[],
    "logprobs" DOUBLE PRECISION[],
    "weightsVersion" TEXT NOT NULL,

    CONSTRAINT "TurnTokens_pkey" PRIMARY KEY ("turnId")
);

-- AddForeignKey
ALTER TABLE "TurnTokens" ADD CONSTRAINT "TurnTokens_turnId_fkey" FOREIGN KEY ("turnId") REFERENCES "Turn"("id") ON DELETE CASCADE ON UPDATE CASCADE;
